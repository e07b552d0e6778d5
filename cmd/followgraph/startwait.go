package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/internal/secret"
	"github.com/followgraph/followgraph/redisgraph"
)

// Start-up against backends that are not up yet: serve tries the
// durable store and Redis again while they are unavailable, for up to
// --start-timeout each, as the event log tries NATS (eventlog's retry,
// whose back-off it takes), so that nodes and their servers may start in
// any order.

// waitBackend calls open until it returns nil, or an error transient
// does not call transient, or timeout has passed since the first try,
// logging each failed try that is tried again at WARN (what names the
// backend). An error open still returns after timeout says so.
func waitBackend(ctx context.Context, logger *slog.Logger, what string, timeout time.Duration,
	transient func(error) bool, open func(ctx context.Context) error) error {
	until := time.Now().Add(timeout)
	for tries := 1; ; tries++ {
		err := open(ctx)
		if err == nil {
			if tries > 1 {
				logger.Info(what+" is available", "tries", tries)
			}
			return nil
		}
		if !transient(err) || ctx.Err() != nil {
			return err
		}
		wait := min(eventlog.StartRetryDelay(tries), time.Until(until))
		if wait <= 0 {
			return fmt.Errorf("%s is still unavailable after --start-timeout %s (%d tries): %w", what, timeout, tries, err)
		}
		logger.Warn(what+" is unavailable; trying again", "try", tries, "retry_in", wait.String(), "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// storeTransient reports whether err, of opening the durable store, is
// the store being unavailable for now (not reached, starting, out of
// connections), rather than an answer (a wrong password, no such
// database).
func storeTransient(err error) bool { return fg.ErrorCode(err) == fg.EUnavailable }

// redisTransient reports whether err, of reaching Redis, is Redis being
// unavailable for now: not reached, loading its data, a Cluster without
// every slot served or electing a master. Any other error (a wrong
// password, a TLS failure) is an answer.
func redisTransient(err error) bool {
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		msg := re.Error()
		return re.IsLoading() || re.IsClusterDown() || re.IsTryAgain() || strings.HasPrefix(msg, "MASTERDOWN")
	}
	var addrErr *net.AddrError // an address that cannot be dialled
	if errors.As(err, &addrErr) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrNoSlot) ||
		errors.Is(err, context.DeadlineExceeded)
}

// probeRedis connects to the Redis at url and to the replicas of
// --redis-replicas (a standalone Redis's), and pings each, so that serve
// waits for them (waitBackend) before it opens the graph, which it does
// once (it registers its metrics).
func probeRedis(ctx context.Context, url, replicas string) error {
	urls := []string{url}
	if replicas != "" && replicas != "cluster" {
		urls = append(urls, strings.Split(replicas, ",")...)
	}
	base, err := redisgraph.ParseURL(url)
	if err != nil {
		return err
	}
	for i, u := range urls {
		o, err := redisgraph.ParseURL(u)
		if err != nil {
			return err
		}
		if i > 0 && o.Password == "" {
			o.Username, o.Password = base.Username, base.Password
		}
		o.DisableCache = true
		c, err := rueidis.NewClient(o)
		if err != nil {
			return fmt.Errorf("redis %s: %w", secret.Redact(u), err)
		}
		err = c.Do(ctx, c.B().Ping().Build()).Error()
		c.Close()
		if err != nil {
			return fmt.Errorf("redis %s: %w", secret.Redact(u), err)
		}
	}
	return nil
}
