package eventlog

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	fg "github.com/followgraph/followgraph"
)

func TestEncode(t *testing.T) {
	ms := time.Date(2026, 11, 30, 15, 4, 5, 123e6, time.UTC).UnixMilli()
	e := fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(ms)+7)
	got := string(encode(e))
	want := `{"user":"1","target":"2","op":"follow","time":"2026-11-30T15:04:05.123Z","version":"` +
		uintString(uint64(fg.VersionAt(ms)+7)) + `"}`
	if got != want {
		t.Fatalf("encode = %s\nwant     %s", got, want)
	}
	st := fg.NewStateEvent(1, fg.StateDeactivated, fg.VersionAt(ms)+7)
	got = string(encode(st))
	want = `{"user":"1","target":"0","op":"state","time":"2026-11-30T15:04:05.123Z","version":"` +
		uintString(uint64(fg.VersionAt(ms)+7)) + `","state":"deactivated"}`
	if got != want {
		t.Fatalf("encode = %s\nwant     %s", got, want)
	}
	// The hand-built JSON is what encoding/json makes of wire, for every op.
	for _, e := range codecEvents(ms) {
		w := wire{
			User: e.User.String(), Target: strconv.FormatInt(int64(e.Target), 10), Op: e.Op.String(),
			Time: e.Time.Format(fg.TimeFormat), Version: uintString(uint64(e.Version)),
		}
		if !e.Since.IsZero() {
			w.Since = e.Since.Format(fg.TimeFormat)
		}
		if !e.Expires.IsZero() {
			w.Expires = e.Expires.Format(fg.TimeFormat)
		}
		if e.Op == fg.OpState {
			w.State = e.State.String()
		}
		j, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if string(j) != string(encode(e)) {
			t.Errorf("encode = %s, json.Marshal = %s", encode(e), j)
		}
		back, err := decode("p", subjectOf("p", e.Op), encode(e))
		if err != nil || back != e {
			t.Errorf("decode(encode(%+v)) = %+v, %v", e, back, err)
		}
	}
}

// codecEvents returns an event of every op at about ms: the two follow
// ops at the extremes of ids and versions, a mute with and one without an
// expiry, and the per-user ops with target 0, the state op once in every
// state. Their versions differ, so that their ids do.
func codecEvents(ms int64) []fg.Event {
	v := fg.VersionAt(ms) + 7
	es := []fg.Event{fg.NewEvent(1, 2, fg.OpFollow, v), fg.NewEvent(fg.MaxUserID, 1, fg.OpUnfollow, 1<<64-1)}
	for op := fg.OpBlock; op.Valid(); op++ {
		v += 2
		e := fg.NewEvent(3, 4, op, v)
		if e.PerUser() {
			e.Target = 0
		}
		if op == fg.OpMute {
			e.Since = fg.Millis(ms - 60_000)
			forever := e
			e.Expires = fg.Millis(ms + 3_600_000)
			e.Version++
			es = append(es, forever)
		}
		if op == fg.OpState {
			for s := fg.StateActive; s.Valid(); s++ {
				e.State = s
				es = append(es, e)
				e.Version++
			}
			continue
		}
		es = append(es, e)
	}
	return es
}

func uintString(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDecode_Rejects(t *testing.T) {
	v := fg.VersionAt(1_700_000_000_000) + 3
	good := string(encode(fg.NewEvent(1, 2, fg.OpFollow, v)))
	replace := func(old, new string) string { return strings.Replace(good, old, new, 1) }
	tests := []struct {
		name, subject, data string
	}{
		{"NotJSON", "p.follow", "follow 1 2"},
		{"NumberID", "p.follow", replace(`"user":"1"`, `"user":1`)},
		{"BadID", "p.follow", replace(`"user":"1"`, `"user":"01"`)},
		{"ZeroTarget", "p.follow", replace(`"target":"2"`, `"target":"0"`)},
		{"SelfFollow", "p.follow", replace(`"target":"2"`, `"target":"1"`)},
		{"UnknownOp", "p.follow", replace(`"op":"follow"`, `"op":"befriend"`)},
		{"OtherOp", "p.follow", replace(`"op":"follow"`, `"op":"block"`)},
		{"FollowSince", "p.follow", replace(`"}`, `","since":"2023-11-14T22:13:20.000Z"}`)},
		{"BlockExpires", "p.block", strings.NewReplacer(`"op":"follow"`, `"op":"block"`, `"}`, `","expires":"2023-11-15T22:13:20.000Z"}`).Replace(good)},
		{"MuteWithoutSince", "p.mute", replace(`"op":"follow"`, `"op":"mute"`)},
		{"MuteSinceAfterTime", "p.mute", strings.NewReplacer(`"op":"follow"`, `"op":"mute"`, `"}`, `","since":"2023-11-14T22:13:21.000Z"}`).Replace(good)},
		{"MuteExpiresAtSince", "p.mute", strings.NewReplacer(`"op":"follow"`, `"op":"mute"`,
			`"}`, `","since":"2023-11-14T22:13:20.000Z","expires":"2023-11-14T22:13:20.000Z"}`).Replace(good)},
		{"MuteSubMillisecond", "p.mute", strings.NewReplacer(`"op":"follow"`, `"op":"mute"`, `"}`, `","since":"2023-11-14T22:13:19.9995Z"}`).Replace(good)},
		{"MuteBadExpires", "p.mute", strings.NewReplacer(`"op":"follow"`, `"op":"mute"`,
			`"}`, `","since":"2023-11-14T22:13:20.000Z","expires":"soon"}`).Replace(good)},
		{"PrivateWithTarget", "p.private", replace(`"op":"follow"`, `"op":"private"`)},
		{"PrivateNoTarget", "p.private", strings.NewReplacer(`"op":"follow"`, `"op":"private"`, `"target":"2",`, ``).Replace(good)},
		{"StateWithTarget", "p.state", replace(`"op":"follow"`, `"op":"state","state":"deleted"`)},
		{"StateWithoutState", "p.state", strings.NewReplacer(`"op":"follow"`, `"op":"state"`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"StateEmpty", "p.state", strings.NewReplacer(`"op":"follow"`, `"op":"state","state":""`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"StateUnknown", "p.state", strings.NewReplacer(`"op":"follow"`, `"op":"state","state":"banned"`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"StateNumber", "p.state", strings.NewReplacer(`"op":"follow"`, `"op":"state","state":1`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"StateUpperCase", "p.state", strings.NewReplacer(`"op":"follow"`, `"op":"state","state":"Deleted"`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"FollowWithState", "p.follow", replace(`"op":"follow"`, `"op":"follow","state":"active"`)},
		{"PrivateWithState", "p.private", strings.NewReplacer(`"op":"follow"`, `"op":"private","state":"deactivated"`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"StateWrongSubject", "p.private", strings.NewReplacer(`"op":"follow"`, `"op":"state","state":"deleted"`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"BlockTargetZero", "p.block", strings.NewReplacer(`"op":"follow"`, `"op":"block"`, `"target":"2"`, `"target":"0"`).Replace(good)},
		{"WrongSubjectOfKind", "p.block", good},
		{"ZeroVersion", "p.follow", replace(uintString(uint64(v)), "0")},
		{"NegativeVersion", "p.follow", replace(uintString(uint64(v)), "-3")},
		{"TimeNotVersion", "p.follow", replace("2023-11-14T22:13:20.000Z", "2023-11-14T22:13:21.000Z")},
		{"BadTime", "p.follow", replace("2023-11-14T22:13:20.000Z", "yesterday")},
		{"WrongSubject", "p.unfollow", good},
		{"OtherPrefix", "q.follow", good},
	}
	if _, err := decode("p", "p.follow", []byte(good)); err != nil {
		t.Fatalf("decode(%s): %v", good, err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if e, err := decode("p", tt.subject, []byte(tt.data)); err == nil {
				t.Fatalf("decode(%q, %s) = %+v, want an error", tt.subject, tt.data, e)
			}
		})
	}
}

// FuzzDecode: decode never panics, and what it accepts is a valid event
// that encodes back to a message decoding to the same event.
func FuzzDecode(f *testing.F) {
	f.Add("p.follow", string(encode(fg.NewEvent(1, 2, fg.OpFollow, fg.VersionAt(1_700_000_000_000)))))
	f.Add("p.unfollow", `{"user":"9223372036854775807","target":"5","op":"unfollow","time":"2023-11-14T22:13:20.000Z","version":"1782579200000000000"}`)
	f.Add("p.follow", `{}`)
	f.Add("p.state", `{"user":"7","target":"0","op":"state","time":"2023-11-14T22:13:20.000Z","version":"1782579200000000000","state":"suspended"}`)
	f.Add("p.state", `{"user":"7","target":"0","op":"state","time":"2023-11-14T22:13:20.000Z","version":"1782579200000000000","state":"x"}`)
	for _, e := range codecEvents(1_700_000_000_000) {
		f.Add(subjectOf("p", e.Op), string(encode(e)))
	}
	f.Fuzz(func(t *testing.T, subject, data string) {
		e, err := decode("p", subject, []byte(data))
		if err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("decode accepted an invalid event %+v: %v", e, err)
		}
		back, err := decode("p", subject, encode(e))
		if err != nil || back != e {
			t.Fatalf("round trip of %+v: %+v, %v", e, back, err)
		}
	})
}
