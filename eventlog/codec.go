package eventlog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/followgraph/followgraph"
)

// wire is the JSON form of an event in the log. Ids and the version are
// decimal strings, as in the HTTP API, because JSON numbers lose precision
// above 2^53 in many readers. A per-user event (OpPrivate, OpPublic,
// OpState) has target "0". Since and Expires are a mute's only: since
// always, expires when the mute has an expiry; every other event has
// neither field. State is an OpState's only, always present, the state's
// word ("active", "deactivated", "suspended", "deleted").
type wire struct {
	User    string `json:"user"`
	Target  string `json:"target"`
	Op      string `json:"op"`
	Time    string `json:"time"`
	Version string `json:"version"`
	Since   string `json:"since,omitempty"`
	Expires string `json:"expires,omitempty"`
	State   string `json:"state,omitempty"`
}

// encode returns the message body of e. It builds the JSON by hand (every
// value is digits, a fixed word or a formatted time, none needs escaping),
// which keeps reflection off the write path; TestEncode proves it equal to
// json.Marshal of wire.
func encode(e followgraph.Event) []byte {
	b := make([]byte, 0, 128)
	b = append(b, `{"user":"`...)
	b = strconv.AppendInt(b, int64(e.User), 10)
	b = append(b, `","target":"`...)
	b = strconv.AppendInt(b, int64(e.Target), 10)
	b = append(b, `","op":"`...)
	b = append(b, e.Op.String()...)
	b = append(b, `","time":"`...)
	b = e.Time.UTC().AppendFormat(b, followgraph.TimeFormat)
	b = append(b, `","version":"`...)
	b = strconv.AppendUint(b, uint64(e.Version), 10)
	if !e.Since.IsZero() {
		b = append(b, `","since":"`...)
		b = e.Since.UTC().AppendFormat(b, followgraph.TimeFormat)
	}
	if !e.Expires.IsZero() {
		b = append(b, `","expires":"`...)
		b = e.Expires.UTC().AppendFormat(b, followgraph.TimeFormat)
	}
	if e.Op == followgraph.OpState {
		b = append(b, `","state":"`...)
		b = append(b, e.State.String()...)
	}
	b = append(b, `"}`...)
	return b
}

// decode parses a message body stored on subject under prefix. It accepts
// only what an engine could have produced: the event must pass
// Event.Validate, its times must be whole milliseconds, and the subject
// must name the event's op.
func decode(prefix, subject string, data []byte) (followgraph.Event, error) {
	e, err := decodeBody(data)
	if err != nil {
		return followgraph.Event{}, err
	}
	if want := subjectOf(prefix, e.Op); subject != want {
		return followgraph.Event{}, fmt.Errorf("event %s stored on subject %q, want %q", e.ID(), subject, want)
	}
	return e, nil
}

// decodeBody parses a message body as decode does, but for its subject.
func decodeBody(data []byte) (followgraph.Event, error) {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return followgraph.Event{}, fmt.Errorf("not an event: %w", err)
	}
	user, err := followgraph.ParseUserID(w.User)
	if err != nil {
		return followgraph.Event{}, fmt.Errorf("user: %w", err)
	}
	var target followgraph.UserID // "0": a per-user event, which Validate checks
	if w.Target != "0" {
		if target, err = followgraph.ParseUserID(w.Target); err != nil {
			return followgraph.Event{}, fmt.Errorf("target: %w", err)
		}
	}
	op, ok := followgraph.ParseOp(w.Op)
	if !ok {
		return followgraph.Event{}, fmt.Errorf("unknown op %q", w.Op)
	}
	v, err := strconv.ParseUint(w.Version, 10, 64)
	if err != nil {
		return followgraph.Event{}, fmt.Errorf("version %q is not a decimal integer", w.Version)
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return followgraph.Event{}, fmt.Errorf("time: %w", err)
	}
	e := followgraph.Event{User: user, Target: target, Op: op, Time: t, Version: followgraph.Version(v)}
	if e.Since, err = parseMillis("since", w.Since); err != nil {
		return followgraph.Event{}, err
	}
	if e.Expires, err = parseMillis("expires", w.Expires); err != nil {
		return followgraph.Event{}, err
	}
	if w.State != "" {
		// Only an OpState has the field; Validate rejects a state on any
		// other op only when it is not active, so say it here.
		if op != followgraph.OpState {
			return followgraph.Event{}, fmt.Errorf("event of op %s has a state", op)
		}
		if e.State, ok = followgraph.ParseState(w.State); !ok {
			return followgraph.Event{}, fmt.Errorf("unknown state %q", w.State)
		}
	} else if op == followgraph.OpState {
		return followgraph.Event{}, fmt.Errorf("state event without a state")
	}
	if err := e.Validate(); err != nil {
		return followgraph.Event{}, err
	}
	e.Time = e.Version.Time() // the same instant, in its canonical form
	return e, nil
}

// parseMillis parses the optional time field name: zero when absent, else
// an RFC 3339 time of whole milliseconds, returned in UTC.
func parseMillis(name, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", name, err)
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return time.Time{}, fmt.Errorf("%s %q is not a whole millisecond", name, s)
	}
	return followgraph.Millis(t.UnixMilli()), nil
}

// subjectOf returns the subject of events of op: "<prefix>.<op word>",
// such as "<prefix>.follow" or "<prefix>.unblock" (see Op.String).
func subjectOf(prefix string, op followgraph.Op) string {
	return prefix + "." + op.String()
}

func (l *Log) skipUndecodable(seq uint64, subject string, data []byte, err error) {
	l.undecodable.Add(1)
	const max = 256
	if len(data) > max {
		data = data[:max]
	}
	l.log.Error("message in the event log is not an event; skipped, never applied",
		"seq", seq, "subject", subject, "data", string(data), "err", err)
}
