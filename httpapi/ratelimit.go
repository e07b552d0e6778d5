package httpapi

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/followgraph/followgraph"
)

// writeLimiter is a token bucket per user. Buckets are kept in shards
// under their own locks; a shard forgets, once a minute, the buckets that
// are full again, which is the state a new bucket starts in, so memory
// follows the users who wrote recently and forgetting changes nothing.
type writeLimiter struct {
	limit  rate.Limit
	burst  int
	shards [limiterShards]limiterShard
}

const (
	limiterShards = 64
	sweepEvery    = time.Minute
)

type limiterShard struct {
	mu    sync.Mutex
	users map[followgraph.UserID]*rate.Limiter
	swept time.Time
}

func newWriteLimiter(perSecond float64, burst int) *writeLimiter {
	l := &writeLimiter{limit: rate.Limit(perSecond), burst: max(burst, 1)}
	for i := range l.shards {
		l.shards[i].users = make(map[followgraph.UserID]*rate.Limiter)
	}
	return l
}

// reserve takes a token of user's bucket at now and returns 0, or, when
// the bucket is empty, takes nothing and returns how long until a token
// will be there.
func (l *writeLimiter) reserve(user followgraph.UserID, now time.Time) time.Duration {
	sh := &l.shards[uint64(user)%limiterShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.swept) >= sweepEvery {
		for id, lim := range sh.users {
			if lim.TokensAt(now) >= float64(l.burst) {
				delete(sh.users, id)
			}
		}
		sh.swept = now
	}
	lim := sh.users[user]
	if lim == nil {
		lim = rate.NewLimiter(l.limit, l.burst)
		sh.users[user] = lim
	}
	res := lim.ReserveN(now, 1)
	if wait := res.DelayFrom(now); wait > 0 {
		res.CancelAt(now)
		return wait
	}
	return 0
}
