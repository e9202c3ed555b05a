package pgw_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The error objects that say a key is refused or the account may not be
// served — fatal when sent as their status (401, 402, 403) or as a 429 that
// says the quota is spent — in the form of each provider.
var fatalErrorObjects = map[string]map[string]string{
	"openai": {
		"invalid_api_key":      `{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}`,
		"authentication_error": `{"message":"bad key","type":"authentication_error","code":null}`,
		"permission_error":     `{"message":"no access to this model","type":"permission_error"}`,
		"insufficient_quota":   `{"message":"no credit left on this account","type":"insufficient_quota","code":"insufficient_quota"}`,
	},
	"anthropic": {
		"invalid_api_key":      `{"type":"invalid_request_error","code":"invalid_api_key","message":"invalid x-api-key"}`,
		"authentication_error": `{"type":"authentication_error","message":"invalid x-api-key"}`,
		"permission_error":     `{"type":"permission_error","message":"your key may not use this model"}`,
		"billing_error":        `{"type":"billing_error","message":"add credit"}`,
	},
	// Gemini's OpenAI-compatible endpoint: a numeric code that is the
	// status, and no type.
	"gemini": {
		"401": `{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}`,
		"403": `{"code":403,"message":"Permission denied on this project","status":"PERMISSION_DENIED"}`,
	},
}

// familyProvider is the PROVIDER of a source of an API family of
// fatalErrorObjects.
func familyProvider(family string) string {
	if family == "anthropic" {
		return "anthropic"
	}
	return "openai"
}

// fatalReplies are the 200 answers that carry obj (an error object of
// provider): a JSON body and a stream's error event.
func fatalReplies(provider, obj string) map[string]wireReply {
	if provider == "anthropic" {
		return map[string]wireReply{
			"json":  jsonReply(200, `{"type":"error","error":`+obj+`}`),
			"event": sseReply("event: error\ndata: {\"type\":\"error\",\"error\":" + obj + "}\n\n"),
		}
	}
	return map[string]wireReply{
		"json":  jsonReply(200, `{"error":`+obj+`}`),
		"event": sseReply("data: {\"error\":" + obj + "}\n\n"),
	}
}

// A refused key, a refused permission or a spent quota reported inside a
// 200 answer (its JSON body or a stream's error event) is fatal on every
// path — pgw's own OpenAI and Anthropic transports (Chat and ChatStream)
// and the governed http client alike — as the same error sent as its
// status is: the breaker opens at once and the call fails over.
func TestFatalErrorInA2xxAnswerIsFatalOnEveryTransport(t *testing.T) {
	for family, objs := range fatalErrorObjects {
		provider := familyProvider(family)
		for code, obj := range objs {
			for delivery, reply := range fatalReplies(provider, obj) {
				for _, path := range []string{"Chat", "ChatStream", "HTTPClient"} {
					t.Run(family+"/"+code+"/"+delivery+"/"+path, func(t *testing.T) {
						ws := newWireServer(t, reply)
						gw, rec := quotaScope(t, provider, ws)
						switch path {
						case "Chat":
							chat(t, gw, false)
						case "ChatStream":
							chat(t, gw, true)
						default:
							resp := post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(delivery == "event"))
							require.Equal(t, http.StatusOK, resp.StatusCode)
							readBody(t, resp)
						}
						requireSpentQuotaClass(t, gw, rec)
						require.NotEmpty(t, rec.Attempts())
						require.Error(t, rec.Attempts()[0].Err)
						assert.Contains(t, rec.Attempts()[0].Err.Error(), code, "the error names what the upstream said")
					})
				}
			}
		}
	}
}

// An error in a 200 answer that has a code and no message is reported by
// what it says — its code, and its type when it has one — on every path,
// never by an empty text or the 200's "OK".
func TestErrorInA2xxAnswerWithOnlyACodeNamesTheCode(t *testing.T) {
	for name, c := range map[string]struct {
		obj, want string
	}{
		"code":          {`{"code":"model_not_available"}`, "model_not_available"},
		"code and type": {`{"code":"model_not_available","type":"server_error"}`, "model_not_available (server_error)"},
		"numeric code":  {`{"code":503,"message":null}`, "503"},
	} {
		for delivery, reply := range fatalReplies("openai", c.obj) {
			for _, path := range []string{"Chat", "HTTPClient"} {
				t.Run(name+"/"+delivery+"/"+path, func(t *testing.T) {
					ws := newWireServer(t, reply)
					gw, rec := quotaScope(t, "openai", ws)
					if path == "Chat" {
						chat(t, gw, delivery == "event")
					} else {
						readBody(t, post(t, gw.HTTPClient("CHAT"), "chat/completions", chatBody(delivery == "event")))
					}
					require.NotEmpty(t, rec.Attempts())
					err := rec.Attempts()[0].Err
					require.Error(t, err)
					assert.Contains(t, err.Error(), c.want)
					assert.NotContains(t, err.Error(), ": OK")
					assert.Equal(t, "primary:failure", rec.Outcomes()[0], "an unknown code is an ordinary failure")
				})
			}
		}
	}
}
