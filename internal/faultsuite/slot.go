package faultsuite

import (
	"fmt"
	"strings"

	"github.com/pgw-go/pgw/internal/testutil"
)

// KeySlot is Redis Cluster's hash slot of key (testutil.KeySlot).
func KeySlot(key string) int { return testutil.KeySlot(key) }

// SourceSlot is the slot of every key of source in scope: gate/redis tags
// them all {<scope lower-cased>:<source>}, whatever the prefix.
func SourceSlot(scope, source string) int {
	return KeySlot("{" + strings.ToLower(scope) + ":" + source + "}")
}

// FleetSlot is the slot of the fleet's heartbeat key, which every
// gateway's Redis prober writes (<prefix>:{pgw-fleet}:alive).
func FleetSlot() int { return KeySlot("{pgw-fleet}") }

// SourceInSlot returns the first source name base+N (N = 0, 1, …) whose
// keys in scope live in slot.
func SourceInSlot(scope, base string, slot int) string {
	for n := 0; ; n++ {
		name := fmt.Sprintf("%s%d", base, n)
		if SourceSlot(scope, name) == slot {
			return name
		}
	}
}
