//go:build !race

package inception

const raceEnabled = false
