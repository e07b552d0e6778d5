package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// frame feeds stream to a framer in reads of the sizes splits gives
// (cycling), and returns the heads it completed and the index of the
// ambiguous one (0 for none) with the bytes delivered up to it.
func frame(stream []byte, splits []int) (heads, ambiguous uint64, delivered int) {
	var f framer
	for i, k := 0, 0; i < len(stream); k++ {
		n := len(stream) - i
		if len(splits) > 0 {
			n = min(n, max(1, splits[k%len(splits)]))
		}
		got, bad := f.feed(stream[i : i+n])
		if bad {
			return f.heads, f.heads, i + got
		}
		i += n
	}
	return f.heads, 0, len(stream)
}

func TestFramer(t *testing.T) {
	get := "GET /v1/users/1 HTTP/1.1\r\nHost: x\r\n\r\n"
	tests := []struct {
		name      string
		stream    string
		heads     uint64
		ambiguous uint64
	}{
		{"one GET", get, 1, 0},
		{"pipelined GETs", get + get + get, 3, 0},
		{"leading CRLF", "\r\n\r\n" + get + "\n" + get, 2, 0},
		{"a body that looks like a head", "POST /x HTTP/1.1\r\nContent-Length: 38\r\n\r\n" + get + "\r\n" + get, 2, 0},
		{"chunked", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n" +
			"10\r\n" + strings.Repeat("z", 16) + "\r\n0\r\nTrailer: y\r\n\r\n" + get, 2, 0},
		{"bare LF heads", "GET / HTTP/1.1\nHost: x\n\n" + get, 2, 0},
		{"both, second request", get + "POST /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get, 2, 2},
		{"both, names in any case", "POST /x HTTP/1.1\r\ntransfer-encoding: chunked\r\nCONTENT-LENGTH: 0\r\n\r\n", 1, 1},
		{"both, folded value", "POST /x HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding:\r\n chunked\r\n\r\nabc", 1, 1},
		{"both, identity", "POST /x HTTP/1.1\r\nTransfer-Encoding: identity\r\nContent-Length: 3\r\n\r\nabc", 1, 1},
		{"unsupported coding stops", "POST /x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n" + get, 1, 0},
		{"bad chunk line stops", "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + get, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, splits := range [][]int{nil, {1}, {3, 7}, {50}} {
				heads, amb, delivered := frame([]byte(tt.stream), splits)
				if heads != tt.heads || amb != tt.ambiguous {
					t.Errorf("splits %v: %d heads, ambiguous %d; want %d, %d", splits, heads, amb, tt.heads, tt.ambiguous)
				}
				if amb != 0 && !bytes.HasSuffix([]byte(tt.stream[:delivered]), []byte("\n\n")) && !bytes.HasSuffix([]byte(tt.stream[:delivered]), []byte("\r\n\r\n")) {
					t.Errorf("splits %v: delivered %q, which does not end at the ambiguous head's end", splits, tt.stream[:delivered])
				}
			}
		})
	}
}

// FuzzFramer: for a stream of generated requests, however it is split
// into reads, the framer counts the requests net/http reads from it, and
// names the first with both Content-Length and Transfer-Encoding.
func FuzzFramer(f *testing.F) {
	f.Add(uint64(1), uint64(2), 5)
	f.Add(uint64(7), uint64(0), 1)
	f.Add(uint64(42), uint64(99), 13)
	f.Fuzz(func(t *testing.T, seed, splitSeed uint64, n int) {
		n = 1 + abs(n)%8
		r := rand.New(rand.NewPCG(seed, 0))
		var stream bytes.Buffer
		first := uint64(0)
		for i := 1; i <= n; i++ {
			if genRequest(r, &stream) && first == 0 {
				first = uint64(i)
			}
		}
		sr := rand.New(rand.NewPCG(splitSeed, 1))
		splits := make([]int, 1+sr.IntN(5))
		for i := range splits {
			splits[i] = 1 + sr.IntN(64)
		}
		heads, amb, _ := frame(stream.Bytes(), splits)
		if amb != first {
			t.Fatalf("ambiguous head %d, want %d, in %q", amb, first, stream.String())
		}
		// net/http reads as many requests up to the first ambiguous one.
		want := uint64(n)
		if first != 0 {
			want = first
		}
		br := bufio.NewReader(bytes.NewReader(stream.Bytes()))
		read := uint64(0)
		for read < want {
			if peek, _ := br.Peek(4); len(peek) > 0 {
				br.Discard(numLeadingCRorLF(peek))
			}
			req, err := http.ReadRequest(br)
			if err != nil {
				t.Fatalf("net/http fails request %d: %v in %q", read+1, err, stream.String())
			}
			read++
			if read == first {
				break
			}
			if _, err := io.Copy(io.Discard, req.Body); err != nil {
				t.Fatalf("net/http fails the body of request %d: %v in %q", read, err, stream.String())
			}
		}
		if heads != read {
			t.Fatalf("framer: %d heads, net/http read %d requests, of %q", heads, read, stream.String())
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func numLeadingCRorLF(v []byte) (n int) {
	for _, b := range v {
		if b != '\r' && b != '\n' {
			break
		}
		n++
	}
	return n
}

// genRequest writes a valid request to w, in one of the forms net/http
// accepts, and reports whether it has both Content-Length and
// Transfer-Encoding.
func genRequest(r *rand.Rand, w *bytes.Buffer) (ambiguous bool) {
	eol := "\r\n"
	if r.IntN(4) == 0 {
		eol = "\n"
	}
	if r.IntN(4) == 0 {
		w.WriteString("\r\n")
	}
	caseOf := func(s string) string {
		switch r.IntN(3) {
		case 0:
			return strings.ToLower(s)
		case 1:
			return strings.ToUpper(s)
		}
		return s
	}
	fmt.Fprintf(w, "POST /v1/x?%d HTTP/1.1%sHost: h%s", r.IntN(1000), eol, eol)
	if r.IntN(2) == 0 {
		fmt.Fprintf(w, "X-Pad: %s%s", strings.Repeat("p", r.IntN(300)), eol)
	}
	switch r.IntN(4) {
	case 0: // no body
		w.WriteString(eol)
	case 1: // Content-Length
		body := strings.Repeat("GET / HTTP/1.1\r\n\r\n", r.IntN(3)) + strings.Repeat("b", r.IntN(40))
		fmt.Fprintf(w, "%s: %d%s%s%s", caseOf("Content-Length"), len(body), eol, eol, body)
	case 2, 3: // chunked, and sometimes Content-Length too
		ambiguous = r.IntN(3) == 0
		fmt.Fprintf(w, "%s: chunked%s", caseOf("Transfer-Encoding"), eol)
		if ambiguous {
			fmt.Fprintf(w, "%s: %d%s", caseOf("Content-Length"), r.IntN(100), eol)
		}
		w.WriteString(eol)
		for range r.IntN(4) {
			data := strings.Repeat("c", 1+r.IntN(30))
			ext := ""
			if r.IntN(3) == 0 {
				ext = ";name=value"
			}
			fmt.Fprintf(w, "%x%s\r\n%s\r\n", len(data), ext, data)
		}
		w.WriteString("0\r\n")
		if r.IntN(3) == 0 {
			w.WriteString("Trailer-Field: t\r\n") // net/http insists on CRLF in trailers
		}
		w.WriteString("\r\n") // net/http wants it whole at the end of a stream
	}
	return ambiguous
}

// BenchmarkFramer: the framing check's cost for one request head as the
// load generator sends it.
func BenchmarkFramer(b *testing.B) {
	head := []byte("GET /v1/users/1/following?limit=20&cursor=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: followgraph-bench\r\nAccept: */*\r\n\r\n")
	var f framer
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		f.feed(head)
	}
}
