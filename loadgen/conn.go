package loadgen

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection of the load generator,
// used by one worker at a time. It writes each request with one system
// call and reads the answer with a buffered reader, so that the
// generator, which shares the machine with the server, takes as little of
// it as it can. It speaks just what a followgraph server answers: a status
// line, headers, and a body of a given Content-Length or chunked.
type conn struct {
	addr   string      // host:port
	tls    *tls.Config // nil: plain HTTP
	header []byte      // extra header lines, each ending "\r\n" (the bearer token)
	c      net.Conn
	br     *bufio.Reader
	req    []byte
}

// do sends method target (a path with its query), with payload as a JSON
// body when it is not nil, and reads the answer's status and body into
// body. Any error leaves the connection closed; the next call dials again.
func (c *conn) do(method string, target, payload []byte, deadline time.Time, body *bytes.Buffer) (status int, err error) {
	if c.c == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		if c.tls != nil {
			conn = tls.Client(conn, c.tls)
		}
		c.c, c.br = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if err := c.c.SetDeadline(deadline); err != nil {
		return 0, err
	}
	r := append(c.req[:0], method...)
	r = append(append(append(r, ' '), target...), " HTTP/1.1\r\nHost: "...)
	r = append(append(r, c.addr...), "\r\n"...)
	r = append(r, c.header...)
	if payload != nil {
		r = append(r, "Content-Type: application/json\r\n"...)
	}
	if method != "GET" {
		r = append(strconv.AppendInt(append(r, "Content-Length: "...), int64(len(payload)), 10), "\r\n"...)
	}
	r = append(append(r, "\r\n"...), payload...)
	c.req = r
	if _, err := c.c.Write(r); err != nil {
		return 0, err
	}
	return c.read(body)
}

var errBadResponse = errors.New("loadgen: malformed HTTP response")

func (c *conn) read(body *bytes.Buffer) (int, error) {
	line, err := c.line()
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("%w: status line %q", errBadResponse, line)
	}
	length, chunked, closing := -1, false, false
	for {
		line, err := c.line()
		if err != nil {
			return 0, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("%w: header %q", errBadResponse, line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, fmt.Errorf("%w: header %q", errBadResponse, line)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	body.Reset()
	switch {
	case chunked:
		err = c.chunks(body)
	case length >= 0:
		_, err = io.CopyN(body, c.br, int64(length))
	default:
		return 0, fmt.Errorf("%w: no Content-Length", errBadResponse)
	}
	if err != nil {
		return 0, err
	}
	if closing {
		c.close()
	}
	return status, nil
}

// chunks reads a chunked body into body.
func (c *conn) chunks(body *bytes.Buffer) error {
	for {
		line, err := c.line()
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimSpace(size)), 16, 31)
		if err != nil {
			return fmt.Errorf("%w: chunk size %q", errBadResponse, line)
		}
		if n == 0 {
			for { // trailers, up to the empty line
				if line, err = c.line(); err != nil || len(line) == 0 {
					return err
				}
			}
		}
		if _, err := io.CopyN(body, c.br, int64(n)); err != nil {
			return err
		}
		if line, err = c.line(); err != nil {
			return err
		}
		if len(line) != 0 {
			return fmt.Errorf("%w: no CRLF after a chunk", errBadResponse)
		}
	}
}

// line returns the next line without its CRLF; it is valid until the next
// read.
func (c *conn) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line over %d bytes", errBadResponse, c.br.Size())
		}
		return nil, err
	}
	return bytes.TrimSuffix(line[:len(line)-1], []byte("\r")), nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c, c.br = nil, nil
	}
}
