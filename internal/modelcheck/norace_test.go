//go:build !race

package modelcheck

const underRace = false
