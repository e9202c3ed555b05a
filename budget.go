package pgw

import (
	"context"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pgw-go/pgw/admission"
	"github.com/pgw-go/pgw/config"
	"github.com/pgw-go/pgw/gate"
	"github.com/pgw-go/pgw/gate/memory"
	"github.com/pgw-go/pgw/gate/redis"
	"github.com/pgw-go/pgw/provider"
)

// buildBudget sets up the advertised budget of sc: what the upstreams'
// rate-limit headers say, kept where the quota is kept (in process, or in
// Redis shared by the fleet), each source read in its provider's dialect.
func buildBudget(g *scopeGates, s *config.Settings, sc config.ScopeSettings, rc goredis.UniversalClient, log *slog.Logger, follow ...redis.FailoverOption) error {
	adv := admission.Advertising{
		Dialects:   make(map[string]provider.Dialect, len(sc.Sources)),
		Configured: make(map[string]gate.Limits, len(sc.Sources)),
	}
	for _, src := range sc.Sources {
		adv.Dialects[src.Name] = provider.DialectOf(src.Provider, src.BaseURL)
		adv.Configured[src.Name] = src.Limits()
	}
	if s.QuotaBackend == config.BackendRedis {
		b, err := redis.NewBudget(rc, sc.Name, redis.WithPrefix(s.Redis.Prefix))
		if err != nil {
			return err
		}
		g.preloadBudget = b.Preload
		if s.Redis.Down == config.RedisFailClosed {
			// The quota and breaker gates fail the call before the
			// budget is asked; a store error of its own admits the call.
			adv.Budget = b
		} else if adv.Budget, err = redis.NewBudgetFailover(b, memory.NewBudget(), log, follow...); err != nil {
			// During an outage the budget is served locally, like the
			// quota under fail_open: it only ever holds calls back.
			return err
		}
	} else {
		adv.Budget = memory.NewBudget()
	}
	g.advertising = adv
	return nil
}

// advertised adds source's configured limits and advertised budget to snap.
func (sc *scope) advertised(ctx context.Context, source string, snap *Snapshot) error {
	snap.Configured = sc.limits[source]
	a, ok, err := sc.loop.Admission().Advertised(ctx, source)
	if err != nil || !ok {
		return err
	}
	snap.Advertised = &a
	return nil
}
