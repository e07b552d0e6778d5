package redisgraph

import (
	"fmt"
	"net"
	"strings"

	"github.com/redis/rueidis"
)

// ParseURL returns the client options for a Redis URL:
//
//	redis://[user:password@]host[:port][/db]        a standalone Redis
//	redis://[user:password@]h1:p1,h2:p2,...          a Cluster, by several seed addresses
//	redis+cluster://[user:password@]h1:p1[,h2:p2...]  a Cluster
//
// rediss:// and rediss+cluster:// are the same over TLS. The port defaults
// to 6379. Query parameters are those of rueidis.ParseURL. A Cluster has
// no database number. Whether the server is a Cluster is in the end
// detected when the client connects, so a single address of a Cluster node
// also works with redis://.
func ParseURL(s string) (rueidis.ClientOption, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL %q: no scheme", s)
	}
	cluster := false
	switch scheme {
	case "redis+cluster", "rediss+cluster":
		cluster = true
		scheme = strings.TrimSuffix(scheme, "+cluster")
	case "redis", "rediss":
	default:
		return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL %q: scheme %q is not redis, rediss, redis+cluster or rediss+cluster", s, scheme)
	}
	// The authority ends at the first '/', '?' or '#'; user info, if any,
	// before its last '@'.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, hosts = authority[:at+1], authority[at+1:]
	}
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL %q: an empty address", s)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "6379")
		}
		addrs = append(addrs, h)
	}
	opt, err := rueidis.ParseURL(scheme + "://" + userinfo + addrs[0] + tail)
	if err != nil {
		return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL %q: %w", s, err)
	}
	if cluster || len(addrs) > 1 {
		if opt.SelectDB != 0 {
			return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL %q: a Cluster has no database %d", s, opt.SelectDB)
		}
		opt.InitAddress = addrs
		opt.ShuffleInit = true
		if opt.TLSConfig != nil {
			opt.TLSConfig.ServerName = "" // each node's own name, from its address
		}
	}
	return opt, nil
}
