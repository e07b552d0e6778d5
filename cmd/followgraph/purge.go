package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	fg "github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/horizon"
	"github.com/followgraph/followgraph/recovery"
)

// defaultTombstoneRetention is --tombstone-retention's default, a week:
// far beyond what a change takes to reach the store in any state the
// service runs in (the write timeout, the nodes' clock skew, a persister
// down over a weekend is covered by the log's own bound), and what a week
// of unfollows costs is small next to the graph (docs/design/horizon.md).
const defaultTombstoneRetention = 7 * 24 * time.Hour

// startPurge runs the purge of tombstones (package horizon) of the store
// and, when it has them, of the engine, bounded by the log's work queue
// and the engine's outbox, until Close; with --tombstone-retention 0,
// nothing.
func (m *Main) startPurge(store durableStore, eng *engine, elog *eventlog.Log, reg prometheus.Registerer) error {
	if m.cfg.TombstoneRetention == 0 {
		return nil
	}
	backlogs := []horizon.Backlog{func(ctx context.Context) (fg.Version, bool, error) { return elog.Oldest(ctx, persisterName) }}
	if eng.backlog != nil {
		backlogs = append(backlogs, eng.backlog)
	}
	holders := []horizon.Holder{{Name: "store", TombstonePurger: store}}
	if p, ok := eng.graph.(fg.TombstonePurger); ok {
		holders = append(holders, horizon.Holder{Name: "engine", TombstonePurger: p})
	}
	p, err := horizon.New(horizon.Config{Retention: m.cfg.TombstoneRetention, Logger: m.logger}, backlogs, holders, reg)
	if err != nil {
		return err
	}
	m.started(p.Run)
	return nil
}

// checkHorizon refuses to start when the log holds a change older than
// the store's tombstone horizon (recovery.CheckHorizon), unless
// --accept-data-loss, which logs it.
func (m *Main) checkHorizon(ctx context.Context, store durableStore, elog *eventlog.Log) error {
	err := recovery.CheckHorizon(ctx, store, elog, persisterName)
	var damage *recovery.Damage
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &damage):
		return err
	case !m.cfg.AcceptDataLoss:
		return fmt.Errorf("refusing to start: %w.\nStart with --accept-data-loss to go on: each change refused is then logged", err)
	}
	m.logger.Error("starting with --accept-data-loss although "+err.Error(), "accept_data_loss", true)
	return nil
}
