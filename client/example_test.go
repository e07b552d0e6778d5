package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/client"
	"github.com/followgraph/followgraph/httpapi"
	"github.com/followgraph/followgraph/memgraph"
)

func Example() {
	// A followgraph server to talk to, in this process: the HTTP server
	// over the embedded engine. A service would dial its real address.
	srv := httptest.NewServer(httpapi.NewServer(memgraph.New()))
	defer srv.Close()

	// A timeout longer than a write's deadline (15 s by default).
	c := client.New(srv.URL, client.WithHTTPClient(&http.Client{Timeout: 20 * time.Second}))
	ctx := context.Background()

	res, err := c.Follow(ctx, 1, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("1 follows 2, new:", res.Created)
	res, err = c.Follow(ctx, 1, 2) // writes are idempotent
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("1 follows 2 again, new:", res.Created)

	edge, err := c.IsFollowing(ctx, 2, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("2 follows 1:", edge.Following)

	counts, err := c.Counts(ctx, []followgraph.UserID{1, 2})
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range counts {
		fmt.Printf("%d: following %d, followers %d\n", n.ID, n.FollowingCount, n.FollowerCount)
	}
	// Output:
	// 1 follows 2, new: true
	// 1 follows 2 again, new: false
	// 2 follows 1: false
	// 1: following 1, followers 0
	// 2: following 0, followers 1
}

func ExampleClient_ListFollowers() {
	srv := httptest.NewServer(httpapi.NewServer(memgraph.New()))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := context.Background()
	for _, e := range [][2]followgraph.UserID{{1, 9}, {3, 9}, {4, 9}, {5, 9}, {1, 4}, {4, 1}, {5, 1}} {
		if _, err := c.Follow(ctx, e[0], e[1]); err != nil {
			log.Fatal(err)
		}
	}

	// The followers of 9, newest first, as user 1 sees them.
	page, err := c.ListFollowers(ctx, 9, client.ListRequest{Viewer: 1})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range page.Entries {
		fmt.Println(e.ID, e.Relation)
	}
	// Output:
	// 5 follower
	// 4 mutual
	// 3 none
	// 1 self
}

func ExampleClient_Following() {
	srv := httptest.NewServer(httpapi.NewServer(memgraph.New()))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := context.Background()
	for target := followgraph.UserID(2); target <= 6; target++ {
		if _, err := c.Follow(ctx, 1, target); err != nil {
			log.Fatal(err)
		}
	}

	// Page through the whole list, two at a time: Next is "" on the last page.
	req := followgraph.PageRequest{Limit: 2}
	for {
		page, err := c.Following(ctx, 1, req)
		if err != nil {
			log.Fatal(err)
		}
		var ids []followgraph.UserID
		for _, e := range page.Entries {
			ids = append(ids, e.ID)
		}
		fmt.Println(ids)
		if req.Cursor = page.Next; req.Cursor == "" {
			break
		}
	}
	// Output:
	// [6 5]
	// [4 3]
	// [2]
}

func Example_errors() {
	srv := httptest.NewServer(httpapi.NewServer(memgraph.New()))
	c := client.New(srv.URL)
	ctx := context.Background()

	// The server's errors come back as *followgraph.Error, with the codes
	// of docs/API.md.
	_, err := c.Follow(ctx, 1, 1)
	var e *followgraph.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code)
	}
	_, err = c.Followers(ctx, 1, followgraph.PageRequest{Limit: 5000})
	fmt.Println(followgraph.ErrorCode(err))

	// With no server to answer, the code is unavailable. On a write it
	// means the outcome is unknown: writes are idempotent, so retry them
	// until they are answered.
	srv.Close()
	_, err = c.Follow(ctx, 1, 2)
	fmt.Println(followgraph.ErrorCode(err))
	// Output:
	// self_follow
	// invalid_argument
	// unavailable
}

func ExampleClient_Block() {
	srv := httptest.NewServer(httpapi.NewServer(memgraph.New()))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := context.Background()
	for _, e := range [][2]followgraph.UserID{{1, 3}, {3, 1}} {
		if _, err := c.Follow(ctx, e[0], e[1]); err != nil {
			log.Fatal(err)
		}
	}

	// A block ends the follows between the two, both ways, and neither
	// may follow the other while it lasts.
	if _, err := c.Block(ctx, 1, 3); err != nil {
		log.Fatal(err)
	}
	counts, err := c.Counts(ctx, []followgraph.UserID{1, 3})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("following:", counts[0].FollowingCount, counts[1].FollowingCount)
	_, err = c.Follow(ctx, 3, 1)
	fmt.Println(followgraph.ErrorCode(err))
	rels, err := c.Relations(ctx, 3, []followgraph.UserID{1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("3 is blocked by 1:", rels[0].BlockedBy)
	// Output:
	// following: 0 0
	// blocked
	// 3 is blocked by 1: true
}

func ExampleClient_SetPrivate() {
	srv := httptest.NewServer(httpapi.NewServer(memgraph.New()))
	defer srv.Close()
	c := client.New(srv.URL)
	ctx := context.Background()

	// Follows of a private account are requests until it approves them.
	if _, err := c.SetPrivate(ctx, 2, true); err != nil {
		log.Fatal(err)
	}
	res, err := c.Follow(ctx, 5, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("requested:", res.Requested)
	reqs, err := c.Links(ctx, followgraph.ListFollowRequests, 2, followgraph.PageRequest{})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range reqs.Entries {
		if _, err := c.Approve(ctx, 2, e.ID); err != nil {
			log.Fatal(err)
		}
	}
	edge, err := c.IsFollowing(ctx, 5, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("5 follows 2:", edge.Following)
	// Output:
	// requested: true
	// 5 follows 2: true
}
