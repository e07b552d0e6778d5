package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

// BenchmarkServe: the cost per request of the server's bounds on clients
// (deadlines, timeouts, the connection limit, the framing check), against
// a bare http.Server on the same handler: keep-alive GETs of a following
// page over loopback from 16 connections, client and server in this
// process. ns/op is per request, client included; the difference between
// the two is the bounds'.
func BenchmarkServe(b *testing.B) {
	g := memgraph.New()
	for i := range 50 {
		if _, err := g.Follow(b.Context(), 1, followgraph.UserID(2+i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"Bare", "Bounded"} {
		b.Run(mode, func(b *testing.B) {
			api := httpapi.NewServer(g)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var srv *http.Server
			if mode == "Bare" {
				srv = &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
			} else {
				srv = api.HTTPServer(api)
				ln = api.Listen(ln)
			}
			go srv.Serve(ln)
			defer srv.Close()
			req := []byte("GET /v1/users/1/following?limit=20 HTTP/1.1\r\nHost: x\r\n\r\n")
			const conns = 16
			var wg sync.WaitGroup
			per := b.N/conns + 1
			b.ResetTimer()
			for range conns {
				wg.Go(func() {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					br := bufio.NewReader(c)
					for range per {
						if _, err := c.Write(req); err != nil {
							b.Error(err)
							return
						}
						resp, err := http.ReadResponse(br, nil)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							b.Error(fmt.Errorf("status %d", resp.StatusCode))
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
