package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/followgraph/followgraph"
)

// TestOpenAPI checks api/openapi.yaml itself: it is a valid OpenAPI 3.1
// document, its error codes are those of the domain, and the server has
// exactly its operations: every method on every path of the document is
// answered as the document says (a 405 with the document's methods in
// Allow where it has no such operation).
func TestOpenAPI(t *testing.T) {
	s := specOf(t)
	if s.doc.OpenAPI != "3.1.0" {
		t.Errorf("api/openapi.yaml is OpenAPI %s, want 3.1.0", s.doc.OpenAPI)
	}

	codes := []string{
		followgraph.EInvalidID, followgraph.EInvalidArgument, followgraph.EInvalidCursor, followgraph.ESelfFollow,
		followgraph.ENotFound, "method_not_allowed", followgraph.EFollowingLimit, followgraph.ETooLarge,
		followgraph.EBlocked, followgraph.ENoRequest, followgraph.EUserInactive, followgraph.ETargetInactive,
		followgraph.ERateLimited, followgraph.EUnavailable, followgraph.EInternal,
		"unauthenticated", "forbidden", // docs/API.md's "Authentication"; the server answers them once configured with it
	}
	var enum []string
	for _, c := range s.doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum {
		enum = append(enum, c.(string))
	}
	slices.Sort(codes)
	slices.Sort(enum)
	if !slices.Equal(codes, enum) {
		t.Errorf("the error codes of api/openapi.yaml are %v, want %v", enum, codes)
	}

	f := newFixture(t, fixtureConfig{})
	f.follow(1, 2)
	methods := []string{"GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"}
	for path := range s.doc.Paths.Map() {
		target := strings.NewReplacer("{user}", "1", "{target}", "2", "{other}", "2", "{requester}", "2", "{follower}", "2").Replace(path)
		for _, m := range methods {
			r := request{method: m, target: target}
			switch {
			case m == "POST":
				r.body = []byte(`{"ids": ["2"]}`)
			case m == "PUT" && strings.HasSuffix(path, "/settings"):
				r.body = []byte(`{"private": false}`)
			case m == "PUT" && strings.HasSuffix(path, "/state"):
				r.body = []byte(`{"state": "active"}`)
			case m == "PUT" && strings.HasPrefix(path, "/v1/users/{user}/followers/"):
				f.follow(2, 1) // something to approve, whatever ran before
			}
			if path == "/metrics" && (m == "GET" || m == "HEAD") {
				continue // Prometheus text; see TestServer_Metrics
			}
			a := f.do(r)
			if op := s.doc.Paths.Find(path).GetOperation(m); op != nil && a.status != http.StatusOK {
				t.Errorf("%s %s (operation %s): %d %s", m, target, op.OperationID, a.status, a.body)
			}
		}
	}
}

// TestOpenAPI_Security checks what api/openapi.yaml says of authentication
// (docs/API.md, "Authentication"). Every operation declares its security,
// its own or the document's, and asks for the tokens of its class of
// route: a read (every GET under /v1/, and POST .../relations) a service
// token with the read scope or a user token; a write a service token with
// the write scope or a user token (its own, as the descriptions say); a
// user's settings a service token with the admin scope or the user's own
// token; setting an account state and /metrics a service token with the
// admin scope; /healthz and /readyz none.
// Every operation that needs a token lists 401 unauthenticated, with a
// required WWW-Authenticate header, and 403 forbidden; one that needs none
// lists neither.
func TestOpenAPI_Security(t *testing.T) {
	doc := specOf(t).doc

	for name, format := range map[string]string{"serviceToken": "", "userToken": "JWT"} {
		ref := doc.Components.SecuritySchemes[name]
		if ref == nil {
			t.Errorf("api/openapi.yaml has no security scheme %s", name)
			continue
		}
		if s := ref.Value; s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") || s.BearerFormat != format {
			t.Errorf("security scheme %s is type %q, scheme %q, bearerFormat %q; want http, bearer, %q",
				name, s.Type, s.Scheme, s.BearerFormat, format)
		}
	}

	var (
		none  = openapi3.SecurityRequirements{}
		read  = openapi3.SecurityRequirements{{"serviceToken": {"read"}}, {"userToken": {}}}
		write = openapi3.SecurityRequirements{{"serviceToken": {"write"}}, {"userToken": {}}}
		admin = openapi3.SecurityRequirements{{"serviceToken": {"admin"}}}
		owner = openapi3.SecurityRequirements{{"serviceToken": {"admin"}}, {"userToken": {}}}
	)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			what := method + " " + path + " (operation " + op.OperationID + ")"
			sec := op.Security
			if sec == nil {
				sec = &doc.Security
				if len(doc.Security) == 0 {
					t.Errorf("%s declares no security, and the document has none", what)
					continue
				}
			}

			var want openapi3.SecurityRequirements
			switch {
			case path == "/healthz" || path == "/readyz":
				want = none
			case path == "/metrics", path == "/v1/users/{user}/state" && method == http.MethodPut:
				want = admin
			case path == "/v1/users/{user}/settings" && method == http.MethodPut:
				want = owner
			case strings.HasPrefix(path, "/v1/") && (method == http.MethodGet || method == http.MethodPost && strings.HasSuffix(path, "/relations")):
				want = read
			case strings.HasPrefix(path, "/v1/"):
				want = write
			default:
				t.Errorf("%s: docs/API.md says nothing of its authentication; add its class to this test", what)
				continue
			}
			if got, w := requirementsString(*sec), requirementsString(want); got != w {
				t.Errorf("%s takes %s, want %s", what, got, w)
			}

			needsToken := len(*sec) > 0 && !slices.ContainsFunc(*sec, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 })
			unauthenticated, forbidden := op.Responses.Status(http.StatusUnauthorized), op.Responses.Status(http.StatusForbidden)
			if !needsToken {
				if unauthenticated != nil || forbidden != nil {
					t.Errorf("%s needs no token, but lists 401 or 403", what)
				}
				continue
			}
			if unauthenticated == nil || forbidden == nil {
				t.Errorf("%s needs a token, but does not list both 401 and 403", what)
				continue
			}
			if h := unauthenticated.Value.Headers["WWW-Authenticate"]; h == nil || !h.Value.Required {
				t.Errorf("%s: its 401 has no required WWW-Authenticate header", what)
			}
			checkErrorResponse(t, what, http.StatusUnauthorized, unauthenticated.Value, "unauthenticated", "forbidden")
			checkErrorResponse(t, what, http.StatusForbidden, forbidden.Value, "forbidden", "unauthenticated")
		}
	}
}

// requirementsString returns security requirements in one canonical
// spelling, such as "serviceToken[read] | userToken[]", to compare them:
// they are alternatives, so their order does not matter.
func requirementsString(srs openapi3.SecurityRequirements) string {
	var alts []string
	for _, sr := range srs {
		var all []string
		for name, scopes := range sr {
			scopes = slices.Sorted(slices.Values(scopes))
			all = append(all, name+"["+strings.Join(scopes, ",")+"]")
		}
		slices.Sort(all)
		alts = append(alts, strings.Join(all, " + "))
	}
	slices.Sort(alts)
	if len(alts) == 0 {
		return "no token"
	}
	return strings.Join(alts, " | ")
}

// checkErrorResponse checks that the JSON body of response r, listed for
// status, is an Error with code and not one with other.
func checkErrorResponse(tb testing.TB, what string, status int, r *openapi3.Response, code, other string) {
	tb.Helper()
	mt := r.Content.Get("application/json")
	if mt == nil || mt.Schema == nil {
		tb.Errorf("%s: its %d has no application/json schema", what, status)
		return
	}
	for c, ok := range map[string]bool{code: true, other: false} {
		var body any
		if err := json.Unmarshal([]byte(`{"error": {"code": "`+c+`", "message": "m"}}`), &body); err != nil {
			tb.Fatal(err)
		}
		err := mt.Schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020())
		if ok && err != nil {
			tb.Errorf("%s: its %d does not take the error %s: %v", what, status, c, err)
		}
		if !ok && err == nil {
			tb.Errorf("%s: its %d takes the error %s, want %s only", what, status, c, code)
		}
	}
}

// TestSpec_Authentication checks spec.check on the answers of a server
// with authentication, which the servers of the other tests do not have: a
// 401 must carry a Bearer challenge and the code unauthenticated, a 403 the
// code forbidden, each where the operation lists it; a request the
// document rejects may be refused for its token before it is read, and a
// request under /v1/ before it is routed.
func TestSpec_Authentication(t *testing.T) {
	s := specOf(t)
	const (
		unauthenticated = `{"error": {"code": "unauthenticated", "message": "a bearer token is required"}}`
		forbidden       = `{"error": {"code": "forbidden", "message": "this token lacks the write scope"}}`
		bearer          = `Bearer realm="followgraph"`
	)
	tests := []struct {
		name      string
		method    string
		target    string
		status    int
		challenge string
		body      string
		ok        bool
	}{
		{"Unauthenticated", "GET", "/v1/users/1", 401, bearer, unauthenticated, true},
		{"UnauthenticatedBareScheme", "DELETE", "/v1/users/1/following/2", 401, "bearer", unauthenticated, true},
		{"UnauthenticatedNoChallenge", "GET", "/v1/users/1", 401, "", unauthenticated, false},
		{"UnauthenticatedOtherScheme", "GET", "/v1/users/1", 401, `Basic realm="followgraph"`, unauthenticated, false},
		{"UnauthenticatedWrongCode", "GET", "/v1/users/1", 401, bearer, forbidden, false},
		{"Forbidden", "PUT", "/v1/users/1/following/2", 403, "", forbidden, true},
		{"ForbiddenWrongCode", "PUT", "/v1/users/1/following/2", 403, "", unauthenticated, false},
		{"UnauthenticatedMetrics", "GET", "/metrics", 401, bearer, unauthenticated, true},
		{"UnauthenticatedHealthz", "GET", "/healthz", 401, bearer, unauthenticated, false},
		{"UnauthenticatedInvalidID", "GET", "/v1/users/abc", 401, bearer, unauthenticated, true},
		{"ForbiddenInvalidID", "PUT", "/v1/users/1/following/0", 403, "", forbidden, true},
		{"InvalidIDAnswered", "GET", "/v1/users/abc", 200, "", `{"id": "1", "following_count": 0, "follower_count": 0}`, false},
		{"UnauthenticatedUnknownRoute", "GET", "/v1/nothing", 401, bearer, unauthenticated, true},
		{"UnauthenticatedUnknownMethod", "PATCH", "/v1/users/1", 401, bearer, unauthenticated, true},
		{"UnauthenticatedUnknownRouteNoChallenge", "GET", "/v1/nothing", 401, "", unauthenticated, false},
		{"UnauthenticatedUnknownRouteOutsideV1", "GET", "/nothing", 401, bearer, unauthenticated, false},
		{"ForbiddenUnknownRoute", "GET", "/v1/nothing", 403, "", forbidden, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, nil)
			header := http.Header{"Content-Type": {"application/json"}}
			if tt.challenge != "" {
				header.Set("WWW-Authenticate", tt.challenge)
			}
			_, err := s.check(context.Background(), req, nil, tt.status, header, []byte(tt.body))
			if tt.ok && err != nil {
				t.Errorf("%s %s answered %d: %v, want it to conform", tt.method, tt.target, tt.status, err)
			}
			if !tt.ok && err == nil {
				t.Errorf("%s %s answered %d %s (WWW-Authenticate %q) conforms, want an error", tt.method, tt.target, tt.status, tt.body, tt.challenge)
			}
		})
	}
}
