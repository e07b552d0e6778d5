package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
			serveLoad(b, ln.Addr().String(), "/v1/users/1/following?limit=20")
		})
	}
}

// BenchmarkServe_Relations: GET /v1/users/1/relations of 100 ids over
// loopback, as BenchmarkServe, with a bounded server: 1 follows 33 of them,
// 33 follow 1, and of the rest 1 mutes 8, blocks 5, is blocked by 5 and
// has requests pending to 5 (private accounts), so that a third of the
// entries carry a flag.
func BenchmarkServe_Relations(b *testing.B) {
	ctx := b.Context()
	g := memgraph.New()
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprint(2 + i)
	}
	must := func(_ any, err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for u := followgraph.UserID(2); u < 35; u++ {
		must(g.Follow(ctx, 1, u))
		must(g.Follow(ctx, u+33, 1))
	}
	for u := followgraph.UserID(68); u < 76; u++ {
		must(g.Mute(ctx, 1, u, 0))
	}
	for u := followgraph.UserID(76); u < 81; u++ {
		must(g.Block(ctx, 1, u))
		must(g.Block(ctx, u+5, 1))
	}
	for u := followgraph.UserID(86); u < 91; u++ {
		must(g.SetPrivate(ctx, u, true))
		must(g.Follow(ctx, 1, u))
	}
	api := httpapi.NewServer(g)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := api.HTTPServer(api)
	go srv.Serve(api.Listen(ln))
	defer srv.Close()
	serveLoad(b, ln.Addr().String(), "/v1/users/1/relations?ids="+strings.Join(ids, ","))
}

// serveLoad sends b.N keep-alive GETs of target to the server at addr from
// 16 connections, and fails b on an answer other than 200.
func serveLoad(b *testing.B, addr, target string) {
	req := []byte("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n")
	const conns = 16
	var wg sync.WaitGroup
	per := b.N/conns + 1
	b.ResetTimer()
	for range conns {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
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
}
