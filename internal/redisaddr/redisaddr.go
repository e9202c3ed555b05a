// Package redisaddr names the Redis a client talks to, for log lines.
package redisaddr

import (
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// Of is the address of c's Redis (host:port), or its cluster's seed
// addresses joined by commas, as an outage log line names it: an operator
// running several Redis deployments learns which one is down. It carries
// no credential (go-redis keeps those in other options); "unknown" for a
// client of another kind.
func Of(c goredis.UniversalClient) string {
	switch c := c.(type) {
	case *goredis.Client:
		return c.Options().Addr
	case *goredis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return "unknown"
}
