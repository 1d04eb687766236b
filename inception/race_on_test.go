//go:build race

package inception

const raceEnabled = true
