package httpapi

import (
	"bytes"
	"strconv"
)

// framer follows the HTTP/1.1 requests read from one connection as
// net/http frames them, far enough to see each request's head and to skip
// its body (Content-Length bytes, or chunks). Its one purpose is RFC 9112
// §6.3: net/http serves a request that has both Content-Length and
// Transfer-Encoding by the latter and drops the former from the header,
// so a handler cannot tell; a proxy in front that framed it by
// Content-Length would see another request boundary than we do. The
// framer sees the header as sent and names such a request (by its index
// on the connection), so the server answers it with an error and closes
// the connection before anything after it runs.
//
// Where the framer meets what it cannot frame (a malformed chunk line, a
// Transfer-Encoding other than chunked), net/http fails the request and
// closes the connection too; the framer then stops looking.
type framer struct {
	st    framerState
	heads uint64 // request heads completed on the connection

	line    [lineKeep]byte // the start of the current line, when it may matter
	lineLen int            // the current line's length so far
	keep    bool           // the current line is kept in line (see feed)
	inHead  bool           // the request line is read: header lines follow
	field   headerField    // the field the previous header line was, for continuations

	contentLength bool
	clValue       int64
	clBad         bool
	transferEnc   bool
	teValue       []byte

	remain int64 // body or chunk bytes to skip
}

type framerState uint8

const (
	stRequest   framerState = iota // before a request line (leading CR and LF are skipped)
	stHead                         // in a request's head
	stBody                         // in a Content-Length body
	stChunkSize                    // in a chunk-size line
	stChunkData                    // in a chunk's data
	stChunkEnd                     // in the CRLF after a chunk's data
	stTrailer                      // in the trailer section after the last chunk
	stOff                          // stopped: nothing after this is framed
)

type headerField uint8

const (
	fieldOther headerField = iota
	fieldContentLength
	fieldTransferEncoding
)

// lineKeep is how much of a line the framer keeps: enough for the names
// and values it reads.
const lineKeep = 128

// feed frames p, the next bytes read from the connection. It returns the
// length of the prefix of p up to the end of a request head that has both
// Content-Length and Transfer-Encoding, with ambiguous true; the caller
// delivers that prefix and nothing after it. Otherwise all of p is framed
// and ambiguous is false.
func (f *framer) feed(p []byte) (n int, ambiguous bool) {
	for i := 0; i < len(p); {
		switch f.st {
		case stOff:
			return len(p), false
		case stRequest:
			if p[i] == '\r' || p[i] == '\n' {
				i++
				continue
			}
			f.st, f.inHead = stHead, false
			f.contentLength, f.clValue, f.clBad = false, 0, false
			f.transferEnc, f.teValue = false, f.teValue[:0]
			f.field = fieldOther
		case stBody, stChunkData:
			k := int64(len(p) - i)
			if k > f.remain {
				k = f.remain
			}
			i += int(k)
			if f.remain -= k; f.remain == 0 {
				if f.st == stBody {
					f.st = stRequest
				} else {
					f.st = stChunkEnd
				}
			}
		default: // the line-oriented states
			j := bytes.IndexByte(p[i:], '\n')
			end := len(p)
			if j >= 0 {
				end = i + j
			}
			if f.lineLen == 0 {
				// In a head only the request line's end, the empty line
				// and the lines of Content-Length and Transfer-Encoding
				// matter, and so the others are not kept: most lines are
				// skipped at the cost of one look at their first byte.
				f.keep = f.st != stHead || end == i || p[i] == '\r' || p[i] == ' ' || p[i] == '\t' ||
					(f.inHead && (p[i]|0x20 == 'c' || p[i]|0x20 == 't'))
			}
			if f.keep && f.lineLen < lineKeep {
				copy(f.line[f.lineLen:], p[i:end])
			}
			f.lineLen += end - i
			if j < 0 {
				return len(p), false
			}
			i = end + 1
			if !f.keep { // a field of no interest, or the request line
				f.lineLen, f.field, f.inHead = 0, fieldOther, true
				continue
			}
			line := f.line[:min(f.lineLen, lineKeep)]
			long := f.lineLen > lineKeep
			f.lineLen = 0
			if f.endLine(line, long) {
				return i, true
			}
		}
	}
	return len(p), false
}

// endLine takes one complete line (without its LF; only its first
// lineKeep bytes when long) and reports whether it ended an ambiguous head.
func (f *framer) endLine(line []byte, long bool) bool {
	switch f.st {
	case stHead:
		return f.headLine(line, long)
	case stChunkSize:
		size, ok := chunkSize(line, long)
		switch {
		case !ok:
			f.st = stOff
		case size == 0:
			f.st = stTrailer
		default:
			f.st, f.remain = stChunkData, size
		}
	case stChunkEnd:
		if len(line) == 1 && line[0] == '\r' {
			f.st = stChunkSize
		} else {
			f.st = stOff
		}
	case stTrailer:
		if len(bytes.TrimSuffix(line, []byte("\r"))) == 0 && !long {
			f.st = stRequest
		}
	}
	return false
}

func (f *framer) headLine(line []byte, long bool) bool {
	if !f.inHead { // the request line
		f.inHead = true
		return false
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) == 0 && !long {
		return f.endHead()
	}
	if line[0] == ' ' || line[0] == '\t' { // obs-fold: the previous field goes on
		switch f.field {
		case fieldContentLength:
			f.clBad = true
		case fieldTransferEncoding:
			f.teValue = append(f.teValue, line...)
		}
		return false
	}
	f.field = fieldOther
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return false
	}
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		f.field = fieldContentLength
		n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil || n < 0 || long || (f.contentLength && n != f.clValue) {
			f.clBad = true
		}
		f.contentLength, f.clValue = true, n
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		f.field = fieldTransferEncoding
		f.transferEnc = true
		f.teValue = append(f.teValue, value...)
		if long {
			f.teValue = append(f.teValue, '?') // not just "chunked"
		}
	}
	return false
}

// endHead decides, at the end of a head, how the request's body is framed.
func (f *framer) endHead() bool {
	f.heads++
	switch {
	case f.contentLength && f.transferEnc:
		f.st = stOff
		return true
	case f.transferEnc:
		if bytes.EqualFold(bytes.TrimSpace(f.teValue), []byte("chunked")) {
			f.st = stChunkSize
		} else {
			f.st = stOff // net/http answers 501 and closes
		}
	case f.contentLength && f.clBad:
		f.st = stOff // net/http answers 400 and closes
	case f.contentLength && f.clValue > 0:
		f.st, f.remain = stBody, f.clValue
	default:
		f.st = stRequest
	}
	return false
}

// chunkSize parses a chunk-size line as net/http does: hexadecimal digits,
// optionally followed by extensions after ';', ended by CRLF.
func chunkSize(line []byte, long bool) (int64, bool) {
	if long || len(line) == 0 || line[len(line)-1] != '\r' {
		return 0, false
	}
	line = line[:len(line)-1]
	if bytes.IndexByte(line, '\r') >= 0 {
		return 0, false
	}
	if semi := bytes.IndexByte(line, ';'); semi >= 0 {
		line = line[:semi]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(line), 16, 64)
	if err != nil || n > 1<<62 {
		return 0, false
	}
	return int64(n), true
}
