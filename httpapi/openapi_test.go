package httpapi_test

import (
	"encoding/json"
	"net/http"
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
		target := strings.NewReplacer("{user}", "1", "{target}", "2", "{other}", "2").Replace(path)
		for _, m := range methods {
			r := request{method: m, target: target}
			if m == "POST" {
				r.body = []byte(`{"ids": ["2"]}`)
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
// the write scope or a user token (its own, as the descriptions say);
// /metrics a service token with the admin scope; /healthz and /readyz none.
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
			case path == "/metrics":
				want = admin
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
