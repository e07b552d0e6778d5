package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/followgraph/followgraph/eventlog"
	"github.com/followgraph/followgraph/pipeline"
)

// The deployment's regions (docs/design/regions.md), as every command is
// told: --region and --region-peers, which name the log's streams; and
// serve's links between the regions' embedded NATS servers,
// --region-listen and --region-link, with --region-retention and
// --region-max-offset.
type regionConfig struct {
	Region    string        // this region's name; "": a deployment in one region
	Peers     string        // the other regions' names, comma separated
	Listen    string        // host:port the embedded NATS takes the other regions' links on
	Links     string        // the other regions' leafnode URLs, comma separated
	Retention time.Duration // how long the region keeps its events for the others
	MaxOffset time.Duration // how far ahead of the clock another region's event may be
}

// regionFlags registers the regions' flags of every command.
func regionFlags(f *pflag.FlagSet, r *regionConfig) {
	f.StringVar(&r.Region, "region", "", "this region's name, in a deployment of several regions that each take writes (docs/DEPLOY.md): the JetStream domain of its NATS, and the mark of its events; needs --region-peers")
	f.StringVar(&r.Peers, "region-peers", "", "the other regions' names, comma separated (with --region)")
}

// serveRegionFlags registers serve's own.
func serveRegionFlags(f *pflag.FlagSet, r *regionConfig) {
	f.StringVar(&r.Listen, "region-listen", "", "host:port the embedded NATS server takes the other regions' leafnode links on (with --region)")
	f.StringVar(&r.Links, "region-link", "", "leafnode URLs (nats-leaf://host:port) of the other regions' NATS servers that the embedded one links to, comma separated (with --region; one region of each pair links, the other listens)")
	f.DurationVar(&r.Retention, "region-retention", eventlog.DefaultRegionRetention, "how long the region keeps its events for the other regions: one cut off for longer must be seeded again, and is refused (with --region; at most --tombstone-retention)")
	f.DurationVar(&r.MaxOffset, "region-max-offset", pipeline.DefaultMaxOffset, "how far ahead of this region's clock another region's event may be: a further one is held back until the clock catches up, and counted in followgraph_region_ahead_total (with --region)")
}

// regions returns the log's regions, or nil without --region.
func (r regionConfig) regions() *eventlog.Regions {
	if r.Region == "" {
		return nil
	}
	return &eventlog.Regions{Name: r.Region, Peers: split(r.Peers), Retention: r.Retention, Listen: r.Listen, Links: split(r.Links)}
}

// id is the region's number, which ends every version its engine issues
// (0 without --region).
func (r regionConfig) id() int {
	if rs := r.regions(); rs != nil {
		return rs.ID(rs.Name)
	}
	return 0
}

// check reports regions that cannot work: embedded is whether the log's
// NATS server is serve's own; retention is --tombstone-retention (0:
// tombstones kept for good).
func (r regionConfig) check(embedded bool, retention time.Duration) error {
	rs := r.regions()
	if rs == nil {
		if r.Peers != "" || r.Listen != "" || r.Links != "" {
			return errors.New("--region-peers, --region-listen and --region-link need --region")
		}
		return nil
	}
	if err := rs.Validate(embedded); err != nil {
		return fmt.Errorf("--region: %w", err)
	}
	if retention > 0 && r.Retention > retention {
		return fmt.Errorf("--region-retention %s is longer than --tombstone-retention %s: a region cut off for longer than the tombstones last would bring back edges the others removed; "+
			"give at most that", r.Retention, retention)
	}
	if r.MaxOffset <= 0 {
		return fmt.Errorf("--region-max-offset %s: want a positive duration, such as 500ms", r.MaxOffset)
	}
	return nil
}

// sourcesCollector exports, at each scrape, how far the log is behind
// each region's export stream: the events it has not copied, and the
// time since it last heard from it (a link cut shows here first).
type sourcesCollector struct{ elog *eventlog.Log }

var (
	sourceLagDesc = prometheus.NewDesc("followgraph_region_source_lag_events",
		"Events a region's export stream holds that this region's log has not copied (its own region's included).", []string{"region"}, nil)
	sourceSilentDesc = prometheus.NewDesc("followgraph_region_source_silent_seconds",
		"Time since this region's log last heard from a region's export stream (-1: never).", []string{"region"}, nil)
)

func (c sourcesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sourceLagDesc
	ch <- sourceSilentDesc
}

func (c sourcesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srcs, err := c.elog.Sources(ctx)
	if err != nil {
		return // the log's own readiness says it is unavailable
	}
	for _, s := range srcs {
		silent := s.Active.Seconds()
		if s.Active < 0 {
			silent = -1
		}
		ch <- prometheus.MustNewConstMetric(sourceLagDesc, prometheus.GaugeValue, float64(s.Lag), s.Region)
		ch <- prometheus.MustNewConstMetric(sourceSilentDesc, prometheus.GaugeValue, silent, s.Region)
	}
}

// split returns the comma separated values of s, none for "".
func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
