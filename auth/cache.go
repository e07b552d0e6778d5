package auth

import (
	"crypto/sha256"
	"maps"
	"sync"
	"time"

	"github.com/followgraph/followgraph"
)

// MaxCachedTokens bounds how many verified users' tokens an Authenticator
// remembers.
const MaxCachedTokens = 100_000

const cacheShards = 32

// tokenCache remembers verified users' tokens, by the SHA-256 of the
// token, until they expire. It is split into shards, each under its own
// lock and holding at most MaxCachedTokens/cacheShards tokens: a shard
// that is full forgets its expired tokens, and all of them if none is.
// Forgetting a token costs its next use a verification, nothing more.
type tokenCache struct {
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu     sync.RWMutex
	tokens map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	user  followgraph.UserID
	until int64 // Unix nanoseconds after which the token is not valid
}

func (c *tokenCache) init() {
	for i := range c.shards {
		c.shards[i].tokens = make(map[[sha256.Size]byte]cachedToken)
	}
}

func (c *tokenCache) shard(h [sha256.Size]byte) *cacheShard {
	return &c.shards[h[0]%cacheShards]
}

// get returns the user of the token whose hash is h, if it is remembered
// and still valid at now.
func (c *tokenCache) get(h [sha256.Size]byte, now time.Time) (followgraph.UserID, bool) {
	sh := c.shard(h)
	sh.mu.RLock()
	t, ok := sh.tokens[h]
	sh.mu.RUnlock()
	if !ok || now.UnixNano() >= t.until {
		return 0, false
	}
	return t.user, true
}

// put remembers that the token whose hash is h is user's until until.
func (c *tokenCache) put(h [sha256.Size]byte, user followgraph.UserID, until, now time.Time) {
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.tokens) >= MaxCachedTokens/cacheShards {
		nowNano := now.UnixNano()
		maps.DeleteFunc(sh.tokens, func(_ [sha256.Size]byte, t cachedToken) bool { return nowNano >= t.until })
		if len(sh.tokens) >= MaxCachedTokens/cacheShards {
			clear(sh.tokens)
		}
	}
	sh.tokens[h] = cachedToken{user: user, until: until.UnixNano()}
}
