package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/followgraph/followgraph"
)

// maxQueryIDs is the most ids GET /v1/users/{user}/relations takes in its
// query string; up to followgraph.MaxRelationIDs go in the body of a POST.
const maxQueryIDs = 1000

// pairWrite returns the handler of a write of the pair of the path's
// {user} and its wildcard other, the shape every such write shares: the
// ids (user equal to other refused with ErrSelfFollow when refuseSelf),
// user's write rate, the change, its metric (change, "created" or
// "removed", when do reports it changed something), and its answer.
func pairWrite[R any](s *Server, op, other string, refuseSelf bool, change string,
	do func(ctx context.Context, user, other followgraph.UserID) (R, bool, error),
	answer func(b []byte, user, other followgraph.UserID, res R) []byte) apiFunc {
	return func(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
		user, target, err := s.writeIDs(op, r, other, refuseSelf)
		if err != nil {
			return b, err
		}
		if err := s.allowWrite(user); err != nil {
			return b, s.writeFailed(op, err)
		}
		res, changed, err := do(ctx, user, target)
		if err != nil {
			return b, s.writeFailed(op, err)
		}
		s.metrics.write(op, outcome(changed, change))
		return answer(b, user, target, res), nil
	}
}

// removal adapts a Graph method that reports whether it removed an edge
// to pairWrite.
func removal(f func(ctx context.Context, user, other followgraph.UserID) (bool, error)) func(context.Context, followgraph.UserID, followgraph.UserID) (bool, bool, error) {
	return func(ctx context.Context, user, other followgraph.UserID) (bool, bool, error) {
		removed, err := f(ctx, user, other)
		return removed, removed, err
	}
}

func (s *Server) follow() apiFunc {
	return pairWrite(s, "follow", "target", true, "created",
		func(ctx context.Context, user, target followgraph.UserID) (followgraph.FollowResult, bool, error) {
			res, err := s.g.Follow(ctx, user, target)
			return res, res.Created, err
		}, appendFollow)
}

func (s *Server) unfollow() apiFunc {
	return pairWrite(s, "unfollow", "target", false, "removed", removal(s.g.Unfollow), appendUnfollow)
}

func outcome(changed bool, change string) string {
	if changed {
		return change
	}
	return "unchanged"
}

// writeFailed counts a failed write under its error code, and returns err.
func (s *Server) writeFailed(op string, err error) error {
	_, code := statusCode(err)
	s.metrics.write(op, code)
	return err
}

// allowWrite returns a rate_limited error when user is over the write rate.
func (s *Server) allowWrite(user followgraph.UserID) error {
	if s.limiter == nil {
		return nil
	}
	wait := s.limiter.reserve(user, time.Now())
	if wait <= 0 {
		return nil
	}
	return followgraph.RateLimited(user, wait)
}

func (s *Server) isFollowing(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user", "target")
	if err != nil {
		return b, err
	}
	e, err := s.g.IsFollowing(ctx, ids[0], ids[1])
	if err != nil {
		return b, err
	}
	return appendEdge(b, ids[0], ids[1], e), nil
}

func (s *Server) counts(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	cs, err := s.g.Counts(ctx, ids)
	if err != nil {
		return b, err
	}
	return appendCounts(b, cs[0]), nil
}

func (s *Server) countsOf(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	q, err := query(r)
	if err != nil {
		return b, err
	}
	ids, err := queryIDs(q, followgraph.MaxCountIDs)
	if err != nil {
		return b, err
	}
	cs, err := s.g.Counts(ctx, ids)
	if err != nil {
		return b, err
	}
	return appendCountsList(b, cs), nil
}

func (s *Server) following(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	return s.list(ctx, r, b, s.g.Following)
}

func (s *Server) followers(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	return s.list(ctx, r, b, s.g.Followers)
}

// list answers a page of the following or the followers list, with the
// viewer's relation to each user when the request names a viewer.
func (s *Server) list(ctx context.Context, r *http.Request, b []byte, read func(context.Context, followgraph.UserID, followgraph.PageRequest) (followgraph.Page, error)) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	q, err := query(r)
	if err != nil {
		return b, err
	}
	v, hasViewer, err := viewer(q)
	if err != nil {
		return b, err
	}
	req, err := pageRequest(q)
	if err != nil {
		return b, err
	}
	p, err := read(ctx, ids[0], req)
	if err != nil {
		return b, err
	}
	var rels []followgraph.RelationInfo
	if hasViewer {
		listed := make([]followgraph.UserID, len(p.Entries))
		for i, e := range p.Entries {
			listed[i] = e.ID
		}
		if rels, err = s.g.Relations(ctx, v, listed); err != nil {
			return b, err
		}
	}
	return appendList(b, p, rels), nil
}

func (s *Server) relations(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	q, err := query(r)
	if err != nil {
		return b, err
	}
	of, err := queryIDs(q, maxQueryIDs)
	if err != nil {
		return b, err
	}
	return s.relationsAnswer(ctx, b, ids[0], of)
}

func (s *Server) relationsOf(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	release, err := s.readingBody(ctx)
	if err != nil {
		return b, err
	}
	of, err := bodyIDs(r.Body, followgraph.MaxRelationIDs)
	release()
	if err != nil {
		return b, err
	}
	return s.relationsAnswer(ctx, b, ids[0], of)
}

// readingBody waits, within ctx, for a turn to read a request body (see
// Limits.MaxBodies), and returns what gives the turn back.
func (s *Server) readingBody(ctx context.Context) (release func(), err error) {
	select {
	case s.bodies <- struct{}{}:
		return func() { <-s.bodies }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("httpapi: waiting to read the body: %w: %w",
			followgraph.Errorf(followgraph.EUnavailable, "too many request bodies are being read; retry later"), ctx.Err())
	}
}

func (s *Server) relationsAnswer(ctx context.Context, b []byte, user followgraph.UserID, of []followgraph.UserID) ([]byte, error) {
	rels, err := s.g.Relations(ctx, user, of)
	if err != nil {
		return b, err
	}
	return appendRelations(b, rels), nil
}

// setQuery answers a page of a set query about the users in the path
// wildcards names.
func (s *Server) setQuery(ctx context.Context, r *http.Request, b []byte, names []string, read func(ctx context.Context, ids []followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error)) ([]byte, error) {
	ids, err := pathIDs(r, names...)
	if err != nil {
		return b, err
	}
	q, err := query(r)
	if err != nil {
		return b, err
	}
	req, err := pageRequest(q)
	if err != nil {
		return b, err
	}
	p, err := read(ctx, ids, req)
	if err != nil {
		return b, err
	}
	return appendSet(b, p), nil
}

func (s *Server) mutuals(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	return s.setQuery(ctx, r, b, []string{"user"}, func(ctx context.Context, ids []followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
		return s.g.Mutuals(ctx, ids[0], req)
	})
}

func (s *Server) commonFollowing(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	return s.setQuery(ctx, r, b, []string{"user", "other"}, func(ctx context.Context, ids []followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
		return s.g.CommonFollowing(ctx, ids[0], ids[1], req)
	})
}

func (s *Server) commonFollowers(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	return s.setQuery(ctx, r, b, []string{"user", "other"}, func(ctx context.Context, ids []followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
		return s.g.CommonFollowers(ctx, ids[0], ids[1], req)
	})
}

func (s *Server) knownFollowers(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	return s.setQuery(ctx, r, b, []string{"user", "target"}, func(ctx context.Context, ids []followgraph.UserID, req followgraph.PageRequest) (followgraph.SetPage, error) {
		return s.g.KnownFollowers(ctx, ids[0], ids[1], req)
	})
}

func (s *Server) suggestions(ctx context.Context, r *http.Request, b []byte) ([]byte, error) {
	ids, err := pathIDs(r, "user")
	if err != nil {
		return b, err
	}
	q, err := query(r)
	if err != nil {
		return b, err
	}
	n, err := limit(q)
	if err != nil {
		return b, err
	}
	ss, err := s.g.Suggestions(ctx, ids[0], n)
	if err != nil {
		return b, err
	}
	return appendSuggestions(b, ss), nil
}
