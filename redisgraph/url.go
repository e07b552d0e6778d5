package redisgraph

import (
	"errors"
	"fmt"
	"net"
	"net/url"
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
// also works with redis://. Errors say what is wrong without quoting the
// URL, which may hold a password.
func ParseURL(s string) (rueidis.ClientOption, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return rueidis.ClientOption{}, errors.New("redisgraph: Redis URL: no scheme (want redis://, rediss://, redis+cluster:// or rediss+cluster://)")
	}
	cluster := false
	switch scheme {
	case "redis+cluster", "rediss+cluster":
		cluster = true
		scheme = strings.TrimSuffix(scheme, "+cluster")
	case "redis", "rediss":
	default:
		return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL: scheme %q is not redis, rediss, redis+cluster or rediss+cluster", scheme)
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
			return rueidis.ClientOption{}, errors.New("redisgraph: Redis URL: an empty address")
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "6379")
		}
		addrs = append(addrs, h)
	}
	opt, err := rueidis.ParseURL(scheme + "://" + userinfo + addrs[0] + tail)
	if err != nil {
		return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL: %w", unquote(err))
	}
	if cluster || len(addrs) > 1 {
		if opt.SelectDB != 0 {
			return rueidis.ClientOption{}, fmt.Errorf("redisgraph: Redis URL: a Cluster has no database %d", opt.SelectDB)
		}
		opt.InitAddress = addrs
		opt.ShuffleInit = true
		if opt.TLSConfig != nil {
			opt.TLSConfig.ServerName = "" // each node's own name, from its address
		}
	}
	return opt, nil
}

// unquote returns the reason of a *url.Error, which quotes the whole URL
// it could not parse, password included.
func unquote(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
