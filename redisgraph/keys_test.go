package redisgraph

import (
	"slices"
	"testing"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/redisgraph/internal/keyspace"
	"github.com/followgraph/followgraph/redisgraph/internal/layout"
	"github.com/followgraph/followgraph/redisgraph/internal/redistest"
)

// TestClusterSlots: a user's keys and its outbox stream are in the slot
// keyspace.SlotOf says, as the Cluster computes it.
func TestClusterSlots(t *testing.T) {
	{
		c := redistest.Cluster(t)
		g := newTestGraph(t, c)
		if !g.Cluster() {
			t.Fatal("a Graph on a Cluster client is not laid out for a Cluster")
		}
		for _, id := range []fg.UserID{1, 42, 1 << 40, fg.MaxUserID} {
			for _, key := range []string{g.ks.User(id, layout.Out), g.ks.Outbox(id)} {
				got, err := c.Do(t.Context(), c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
				if err != nil {
					t.Fatal(err)
				}
				if got != int64(keyspace.SlotOf(id)) {
					t.Errorf("CLUSTER KEYSLOT %s = %d, want %d, the slot of user %d", key, got, keyspace.SlotOf(id), id)
				}
			}
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, tt := range []struct {
		url   string
		addrs []string
		db    int
		user  string
		pass  string
		tls   bool
	}{
		{url: "redis://127.0.0.1:6379", addrs: []string{"127.0.0.1:6379"}},
		{url: "redis://localhost", addrs: []string{"localhost:6379"}},
		{url: "redis://h:7000/3", addrs: []string{"h:7000"}, db: 3},
		{url: "redis://u:p@h:7000/0?dial_timeout=3s", addrs: []string{"h:7000"}, user: "u", pass: "p"},
		{url: "redis://h1:7000,h2:7001,h3", addrs: []string{"h1:7000", "h2:7001", "h3:6379"}},
		{url: "redis+cluster://h1:7000", addrs: []string{"h1:7000"}},
		{url: "rediss+cluster://:secret@h1:7000,h2:7001", addrs: []string{"h1:7000", "h2:7001"}, pass: "secret", tls: true},
		{url: "redis://[::1]:7000,[::1]", addrs: []string{"[::1]:7000", "[::1]:6379"}},
	} {
		opt, err := ParseURL(tt.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.url, err)
			continue
		}
		if !slices.Equal(opt.InitAddress, tt.addrs) || opt.SelectDB != tt.db || opt.Username != tt.user ||
			opt.Password != tt.pass || (opt.TLSConfig != nil) != tt.tls {
			t.Errorf("ParseURL(%q) = addresses %v, db %d, user %q, password %q, TLS %v; want %v, %d, %q, %q, %v",
				tt.url, opt.InitAddress, opt.SelectDB, opt.Username, opt.Password, opt.TLSConfig != nil,
				tt.addrs, tt.db, tt.user, tt.pass, tt.tls)
		}
	}
	for _, bad := range []string{
		"127.0.0.1:6379",           // no scheme
		"http://h:6379",            // another scheme
		"redis://h1:7000,,h2",      // an empty address
		"redis+cluster://h:7000/2", // a Cluster has no database
		"redis://h1,h2/1",
		"redis://h:port",
	} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = nil error, want an error", bad)
		}
	}
}
