//go:build race

package offline

const raceEnabled = true
