package followgraph

import (
	"context"
	"fmt"
	"slices"
)

// Mend restores the rules between kinds that regions taking writes at
// once can break, once events of another region have been applied to g
// (Applier.Apply). A region checks each write against what it holds, but
// a change made in one region meets the other region's concurrent changes
// only when it arrives there, and every edge keeps its highest version on
// its own: a follow made in one region while a block of the pair was made
// in the other can outlive the block, and a follow request made to an
// account that another region has just made public stays pending. Mend
// looks at the pairs and accounts that events touch and ends what breaks
// a rule, as the change that came second would have, had it come second
// everywhere:
//
//   - a follow or a follow request between two users while either blocks
//     the other ends (Unfollow by its user), as the block would have ended
//     it;
//   - a follow request to a public account is approved (SetPrivate(false)
//     on it again), as making the account public would have approved it;
//   - a follow request of a user who follows already ends (Approve), as
//     the follow would have ended it.
//
// Each repair is an ordinary write of g, so it is an event of this region
// that reaches the others, where the highest version wins as for any
// change: whichever regions mend a pair, and in whatever order, they end
// in the same state (docs/design/regions.md). Mend reads g after the
// events, so repeating it (a batch delivered again) repairs only what is
// still broken. An account that is not active shows no edges (SetState):
// what its edges break is not seen, and so not mended, until it is active
// again and another change of the pair or account comes.
//
// Mend returns how many writes it made.
func Mend(ctx context.Context, g Graph, events []Event) (int, error) {
	var pairs [][2]UserID
	var public []UserID
	for _, e := range events {
		switch e.Op {
		case OpFollow, OpRequest, OpBlock:
			a, b := min(e.User, e.Target), max(e.User, e.Target)
			pairs = append(pairs, [2]UserID{a, b})
			if e.Op == OpRequest {
				public = append(public, e.Target)
			}
		case OpPublic:
			public = append(public, e.User)
		}
	}
	n := 0
	for _, p := range uniq(pairs) {
		k, err := mendPair(ctx, g, p[0], p[1])
		n += k
		if err != nil {
			return n, err
		}
	}
	for _, u := range uniq(public) {
		k, err := mendPublic(ctx, g, u)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func uniq[T comparable](s []T) []T {
	seen := make(map[T]bool, len(s))
	return slices.DeleteFunc(s, func(x T) bool {
		if seen[x] {
			return true
		}
		seen[x] = true
		return false
	})
}

// mendPair ends the follows and follow requests between a and b while
// either blocks the other.
func mendPair(ctx context.Context, g Graph, a, b UserID) (int, error) {
	rel, err := g.Relations(ctx, a, []UserID{b})
	if err != nil || len(rel) != 1 {
		return 0, mendErr(err, "relations of %d and %d", a, b)
	}
	r := rel[0]
	blocked := r.Blocking || r.BlockedBy
	n := 0
	for _, d := range [2]struct {
		follows, asks bool
		user, target  UserID
	}{
		{!r.FollowingSince.IsZero(), r.Requested, a, b},
		{!r.FollowedBySince.IsZero(), r.RequestedBy, b, a},
	} {
		switch {
		case blocked && (d.follows || d.asks):
			removed, err := g.Unfollow(ctx, d.user, d.target)
			if err != nil {
				return n, mendErr(err, "ending %d→%d across a block", d.user, d.target)
			}
			if removed {
				n++
			}
		case d.follows && d.asks:
			// Approving a request of a follower ends the request.
			if _, err := g.Approve(ctx, d.target, d.user); err != nil {
				return n, mendErr(err, "ending %d's request to %d, which it follows", d.user, d.target)
			}
			n++
		}
	}
	return n, nil
}

// mendPublic approves the pending follow requests to u while u is public.
func mendPublic(ctx context.Context, g Graph, u UserID) (int, error) {
	s, err := g.Settings(ctx, u)
	if err != nil || s.Private {
		return 0, mendErr(err, "settings of %d", u)
	}
	p, err := g.Links(ctx, ListFollowRequests, u, PageRequest{Limit: 1})
	if err != nil || len(p.Entries) == 0 {
		return 0, mendErr(err, "follow requests to %d", u)
	}
	if _, err := g.SetPrivate(ctx, u, false); err != nil {
		return 0, mendErr(err, "approving the follow requests to public %d", u)
	}
	return 1, nil
}

// mendErr wraps err (nil: nil); an inactive user's is no error: its edges
// are hidden, and nothing is mended of them (see Mend).
func mendErr(err error, format string, args ...any) error {
	switch ErrorCode(err) {
	case "", EUserInactive, ETargetInactive:
		return nil
	}
	return fmt.Errorf("followgraph: mend: %s: %w", fmt.Sprintf(format, args...), err)
}
