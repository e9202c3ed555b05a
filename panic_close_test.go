package pgw_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgw-go/pgw"
	"github.com/pgw-go/pgw/config"
)

type panickyChat struct{}

func (panickyChat) ChatStream(context.Context, pgw.Source, pgw.ChatRequest) (pgw.ChatStream, error) {
	panic("transport bug")
}

// A panic in a transport goes on to the caller, and the call it cut short
// leaves the gateway: Close does not wait for it forever.
func TestCloseAfterAPanicInAChatTransport(t *testing.T) {
	for name, call := range map[string]func(*pgw.GatewayClient){
		"Chat":       func(gw *pgw.GatewayClient) { _, _ = gw.Chat(context.Background(), hello()) },
		"ChatStream": func(gw *pgw.GatewayClient) { _, _ = gw.ChatStream(context.Background(), hello()) },
	} {
		t.Run(name, func(t *testing.T) {
			s, err := config.FromMap(map[string]string{"PGW_SCOPES": "CHAT", "CHAT__SOURCES": "solo"})
			require.NoError(t, err)
			// No Close at cleanup: the test's own Close is what it checks.
			gw, err := pgw.New(context.Background(), *s, pgw.WithLogger(testLogger(t)), pgw.WithChatTransport(panickyChat{}))
			require.NoError(t, err)
			require.PanicsWithValue(t, "transport bug", func() { call(gw) })
			closed := make(chan error, 1)
			go func() { closed <- gw.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Close waits for a call that panicked")
			}
		})
	}
}
