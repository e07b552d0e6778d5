package eventlog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/followgraph/followgraph"
	"github.com/followgraph/followgraph/internal/secret"
)

// Regions make the log one region's of a deployment in several regions,
// each a whole deployment that takes writes (docs/design/regions.md).
// Each region is a JetStream domain of its own, and the regions' NATS
// servers are joined by leafnode links, so that a partition leaves each
// region its own meta leader and streams.
//
// A region publishes its events to its export stream, <Stream>_EXPORT, on
// subjects "<Subject>.<region>.<op word>": limits retention, kept for
// Retention, so that another region that was cut off copies, when the link
// is back, what it missed, from where it stopped, whatever the persister
// here did meanwhile. The log itself (the work queue the persister reads,
// named <Stream>_<region>: see name) takes no publishes: it sources the export
// stream of its own region and, over the links, those of the others,
// filtered on their own subjects, so that nothing is copied back. A
// message copied twice (a source that resumes after a link came back) is
// dropped by its Nats-Msg-Id within the duplicate window, and otherwise
// applied again to no effect (versions).
//
// Why not source the other region's work queue: its persister's
// acknowledgement removes an event that the other region has not copied
// yet, and a source whose consumer went away during a long partition
// finds it gone (nats-server#3207).
// An export stream with limits retention keeps every event for Retention
// whoever read it.
//
// Consume's messages say which events came from another region
// (Message.Foreign): the persister applies those to the engine as well as
// to the store. A region's own events reach its log a moment after their
// acknowledgement, so a Replay at start may miss the last few; an engine
// that keeps nothing across a restart (memgraph) has the persister apply
// its own region's events too (pipeline.Options.Import).
type Regions struct {
	// Name is this region's name: its JetStream domain (an external
	// server is configured with it: jetstream { domain: <name> }) and the
	// token of its events' subjects. Letters, digits, '_' and '-'.
	Name string
	// Peers are the other regions' names.
	Peers []string
	// Retention is how long the export stream keeps an event: a region
	// cut off for longer than it cannot copy what it missed, and must be
	// seeded again from another region. Default DefaultRegionRetention.
	Retention time.Duration
	// Listen is the host:port the embedded server takes the other
	// regions' leafnode links on ("": none). Embedded server only.
	Listen string
	// Links are the leafnode URLs (nats-leaf://host:port) of the other
	// regions' servers that the embedded server connects to. One side of
	// each pair of regions links, the other listens. Embedded server only.
	Links []string
}

// DefaultRegionRetention is Regions.Retention's default: a week, the
// longest partition a region rides out without being seeded again.
const DefaultRegionRetention = 7 * 24 * time.Hour

// leafReconnect is how soon the embedded server tries a dropped leafnode
// link again.
const leafReconnect = time.Second

// Validate returns an error naming what in r cannot work; embedded says
// whether the log's server is its own (Config.URL empty). Open calls it.
func (r *Regions) Validate(embedded bool) error {
	if !validToken(r.Name) {
		return fmt.Errorf("eventlog: region name %q: it must be letters, digits, '_' or '-'", r.Name)
	}
	if len(r.Peers) == 0 {
		return fmt.Errorf("eventlog: region %s has no peers: name the other regions", r.Name)
	}
	all := r.all()
	for i, p := range all {
		if !validToken(p) {
			return fmt.Errorf("eventlog: peer region name %q: it must be letters, digits, '_' or '-'", p)
		}
		if i > 0 && all[i-1] == p {
			return fmt.Errorf("eventlog: region %q is named twice among the region and its peers", p)
		}
	}
	if len(all) > followgraph.MaxRegion {
		return fmt.Errorf("eventlog: %d regions: at most %d", len(all), followgraph.MaxRegion)
	}
	if r.Retention < 0 {
		return fmt.Errorf("eventlog: region retention %s is negative", r.Retention)
	}
	if !embedded && (r.Listen != "" || len(r.Links) > 0) {
		return errors.New("eventlog: region links and listen address are for the embedded server: configure an external server's leafnodes in its own configuration")
	}
	if r.Listen != "" {
		if _, _, err := hostPort(r.Listen); err != nil {
			return fmt.Errorf("eventlog: region listen address: %w", err)
		}
	}
	for _, l := range r.Links {
		if _, err := linkURL(l); err != nil {
			return err
		}
	}
	return nil
}

// all returns the names of every region, sorted.
func (r *Regions) all() []string {
	all := append([]string{r.Name}, r.Peers...)
	slices.Sort(all)
	return all
}

// ids returns every region's number (ID), by name.
func (r *Regions) ids() map[string]int {
	m := map[string]int{}
	for i, name := range r.all() {
		m[name] = i + 1
	}
	return m
}

// ID returns the number of region name among the deployment's regions,
// 1 to followgraph.MaxRegion: its place among their names in byte
// order, so that every region, configured with the same names, gives each
// the same. The versions a region issues end in its number
// (followgraph.NextVersion), and an event from a peer whose version does
// not is refused as undecodable: regions configured differently. 0 for a
// name that is not a region's.
func (r *Regions) ID(name string) int { return r.ids()[name] }

func (r *Regions) retention() time.Duration {
	if r.Retention == 0 {
		return DefaultRegionRetention
	}
	return r.Retention
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hostPort splits addr, a host:port to listen on, and checks its port.
func hostPort(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: want host:port: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", 0, fmt.Errorf("%q: the port must be 1 to 65535", addr)
	}
	return host, p, nil
}

func linkURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "nats-leaf" && u.Scheme != "tls" || u.Host == "" {
		return nil, fmt.Errorf("eventlog: region link %q: want nats-leaf://host:port", secret.Redact(s))
	}
	return u, nil
}

// apply configures the embedded server as the region's: its domain, and
// its leafnode listener and links. The listener does not advertise its
// address: a linked server would learn it and reconnect around the
// address it was given (a proxy, a load balancer).
func (r *Regions) apply(o *server.Options) error {
	o.JetStreamDomain = r.Name
	if o.Cluster.Name == "" {
		o.ServerName = "followgraph-" + r.Name // unique across the linked servers
	}
	if r.Listen != "" {
		host, port, _ := hostPort(r.Listen)
		o.LeafNode.Host, o.LeafNode.Port, o.LeafNode.NoAdvertise = host, port, true
	}
	for _, l := range r.Links {
		u, err := linkURL(l)
		if err != nil {
			return err
		}
		o.LeafNode.Remotes = append(o.LeafNode.Remotes, &server.RemoteLeafOpts{URLs: []*url.URL{u}})
	}
	o.LeafNode.ReconnectInterval = leafReconnect
	return nil
}

// name is the log stream's name: Config.Stream, followed with regions by
// "_<region>". The names of a stream and its consumer are all that a
// consumer's acknowledgements are sent to ($JS.ACK.<stream>.<consumer>.…),
// and the linked regions share their subjects: a persister's
// acknowledgements in one region would otherwise remove the events of
// the same sequences from the other region's log before its persister
// stored them.
func (l *Log) name() string {
	if r := l.cfg.Regions; r != nil {
		return l.cfg.Stream + "_" + r.Name
	}
	return l.cfg.Stream
}

// exportName is the name of the region's export stream.
func (l *Log) exportName() string { return l.cfg.Stream + "_EXPORT" }

// pubPrefix is the prefix of the subjects the log's events are published
// on: "<Subject>" in one region, "<Subject>.<region>" with regions.
func (l *Log) pubPrefix() string {
	if r := l.cfg.Regions; r != nil {
		return l.cfg.Subject + "." + r.Name
	}
	return l.cfg.Subject
}

// exportConfig is the configuration Open creates the export stream with.
func (l *Log) exportConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        l.exportName(),
		Description: "followgraph events of region " + l.cfg.Regions.Name + ", kept for the other regions (package eventlog)",
		Subjects:    []string{l.pubPrefix() + ".>"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      l.cfg.Regions.retention(),
		Storage:     jetstream.FileStorage,
		Replicas:    l.cfg.Replicas,
		Duplicates:  DuplicateWindow,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		AllowDirect: true,
	}
}

// localSource is the log's source of the region's own export stream, and
// peerSource its source of peer's, filtered on the peer's own events.
// Each starts at the first event its stream holds: a source that has no
// position yet (new, or its state lost) would otherwise start at the time
// of the log's last message, and skip what the export stream holds from
// before it (the events a region took before the other's log was made,
// say).
func (l *Log) localSource() *jetstream.StreamSource {
	return &jetstream.StreamSource{Name: l.exportName(), OptStartSeq: 1}
}

func (l *Log) peerSource(peer string) *jetstream.StreamSource {
	return &jetstream.StreamSource{Name: l.exportName(), FilterSubject: l.cfg.Subject + "." + peer + ".>", OptStartSeq: 1,
		External: &jetstream.ExternalStream{APIPrefix: "$JS." + peer + ".API"}}
}

// sourceKey names a source by what makes it the same source to the
// server: its stream, filter and domain.
func sourceKey(s *jetstream.StreamSource) string {
	k := s.Name + " " + s.FilterSubject
	if s.External != nil {
		k += " " + s.External.APIPrefix
	}
	return k
}

// checkSources returns an error unless the log's sources are its own
// region's export stream and some of the peers' (linkPeers adds the
// others once they answer).
func (l *Log) checkSources(got []*jetstream.StreamSource) error {
	allowed := map[string]bool{sourceKey(l.localSource()): true}
	for _, p := range l.cfg.Regions.Peers {
		allowed[sourceKey(l.peerSource(p))] = true
	}
	local := false
	for _, s := range got {
		k := sourceKey(s)
		if !allowed[k] {
			return fmt.Errorf("a source %q that is not a region's of this deployment", k)
		}
		local = local || k == sourceKey(l.localSource())
	}
	if !local {
		return fmt.Errorf("no source of the region's export stream %s", l.exportName())
	}
	return nil
}

// linkInterval is how often linkPeers looks for the peers it has not
// linked yet; once all are, it looks every linkedInterval.
const (
	linkInterval   = time.Second
	linkedInterval = 10 * time.Second
)

// linkPeers adds to the log, until the log closes, the source of each
// peer region whose export stream answers. The log is made with
// its own region's source only: a source whose stream does not answer
// (the other region not started yet, or out of reach) is tried again by
// the server after a back-off that grows by 10 s a failure up to 2
// minutes, so that a region started before the other would copy the
// other's first events minutes late. A source added once the stream
// answers starts at once; after that the server keeps it, and resumes it
// after a partition. Once every peer is linked it looks again every
// linkedInterval: another node of the region that changed the log's
// configuration at the same moment (SetFedStore) may have written it
// back without a source just added.
func (l *Log) linkPeers() {
	defer close(l.linked)
	for {
		wait := linkInterval
		missing, err := l.unlinked()
		if err == nil && len(missing) == 0 {
			wait = linkedInterval
		}
		for _, p := range missing {
			if err := l.link(p); err != nil {
				l.log.Debug("the other region's export stream does not answer yet", "region", p, "err", err)
			}
		}
		select {
		case <-l.closing:
			return
		case <-time.After(wait):
		}
	}
}

// unlinked returns the peers the log does not source yet.
func (l *Log) unlinked() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), linkInterval)
	defer cancel()
	s, err := l.js.Stream(ctx, l.name())
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, src := range s.CachedInfo().Config.Sources {
		have[sourceKey(src)] = true
	}
	var missing []string
	for _, p := range l.cfg.Regions.Peers {
		if !have[sourceKey(l.peerSource(p))] {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// link adds peer's source to the log if peer's export stream answers.
func (l *Log) link(peer string) error {
	ctx, cancel := context.WithTimeout(context.Background(), linkInterval)
	defer cancel()
	js, err := jetstream.NewWithDomain(l.nc, peer)
	if err != nil {
		return err
	}
	if _, err := js.Stream(ctx, l.exportName()); err != nil {
		return err
	}
	l.configMu.Lock()
	defer l.configMu.Unlock()
	s, err := l.js.Stream(ctx, l.name()) // as it is now: another node may have linked it
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	src := l.peerSource(peer)
	if slices.ContainsFunc(cfg.Sources, func(s *jetstream.StreamSource) bool { return sourceKey(s) == sourceKey(src) }) {
		return nil
	}
	cfg.Sources = append(cfg.Sources, src)
	if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
		return err
	}
	l.log.Info("copying the other region's events", "region", peer)
	return nil
}

// ensureExport finds or creates the export stream and checks it.
func (l *Log) ensureExport(ctx context.Context) error {
	want := l.exportConfig()
	return l.retry(ctx, "stream "+want.Name, func(ctx context.Context) error {
		s, err := l.js.CreateOrUpdateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = l.js.Stream(ctx, want.Name)
		}
		if err != nil {
			return err
		}
		got := s.CachedInfo().Config
		if !slices.Equal(got.Subjects, want.Subjects) || got.Retention != jetstream.LimitsPolicy {
			return final{fmt.Errorf("eventlog: stream %s exists but cannot be the region's export stream: subjects %q and retention %s, want %q and limits",
				want.Name, got.Subjects, got.Retention, want.Subjects)}
		}
		return nil
	})
}

// decode decodes a message of the log stored on subject, and reports
// whether it came from another region.
func (l *Log) decode(subject string, data []byte) (followgraph.Event, bool, error) {
	r := l.cfg.Regions
	if r == nil {
		e, err := decode(l.cfg.Subject, subject, data)
		return e, false, err
	}
	rest, _ := strings.CutPrefix(subject, l.cfg.Subject+".")
	origin, _, _ := strings.Cut(rest, ".")
	id := l.regionIDs[origin]
	if id == 0 {
		return followgraph.Event{}, false, fmt.Errorf("subject %q names no region of this deployment (%s)", subject, strings.Join(r.all(), ", "))
	}
	e, err := decode(l.cfg.Subject+"."+origin, subject, data)
	if err != nil {
		return e, false, err
	}
	if e.Version.Region() != id {
		return followgraph.Event{}, false, fmt.Errorf("event %s of region %s has a version of region number %d, want %d: are the regions configured alike?",
			e.ID(), origin, e.Version.Region(), id)
	}
	return e, origin != r.Name, nil
}

// Source is how far the log is behind one region's export stream.
type Source struct {
	Region string
	Lag    uint64        // events the export stream holds that the log has not copied
	Active time.Duration // since the log last heard from it
	Err    string        // the source's error, if any
}

// Sources returns, in a deployment with regions, how far the log is
// behind each region's export stream, its own region's first; nil in one
// region. Returns EUnavailable when the log cannot be read.
func (l *Log) Sources(ctx context.Context) ([]Source, error) {
	r := l.cfg.Regions
	if r == nil {
		return nil, nil
	}
	info, err := l.stream.Info(ctx)
	if err != nil {
		return nil, unavailable("sources", err)
	}
	out := make([]Source, 0, len(info.Sources))
	for _, si := range info.Sources {
		s := Source{Region: r.Name, Lag: si.Lag, Active: si.Active}
		if si.External != nil {
			s.Region = strings.TrimSuffix(strings.TrimPrefix(si.External.APIPrefix, "$JS."), ".API")
		}
		if si.Error != nil {
			s.Err = si.Error.Description
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b Source) int {
		switch {
		case a.Region == r.Name:
			return -1
		case b.Region == r.Name:
			return 1
		}
		return strings.Compare(a.Region, b.Region)
	})
	return out, nil
}
