package faultsuite

import (
	"fmt"
	"strings"
)

// KeySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of its hash
// tag — the part between the first '{' and the next '}', when not empty —
// or of the whole key, modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}

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
