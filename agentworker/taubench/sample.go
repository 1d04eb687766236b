package taubench

import (
	"embed"
	"fmt"
	"io/fs"
)

// sampleData is rein's own small data set (invented for this project, not
// τ-bench records), in τ-bench's format, for the demo and fixture-free tests.
//
//go:embed sampledata/airline/*.json sampledata/retail/*.json
var sampleData embed.FS

// Sample loads the embedded sample database of "airline" or "retail".
//
// Airline: 9 flights (2024-05-10 … 2024-05-25, bookable from 05-16), three
// users; nora_quist_4821 holds three reservations (so "cancel that one" is
// ambiguous). Retail: 4 products, two users; lena_okafor_5530 has four
// orders (pending, processed, two delivered).
func Sample(name string) (*Domain, error) {
	if _, ok := tableNames[name]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDomain, name)
	}
	sub, err := fs.Sub(sampleData, "sampledata/"+name)
	if err != nil {
		return nil, fmt.Errorf("sample %s: %w", name, err)
	}
	return LoadFS(name, sub)
}

// SampleFS is the embedded sample data directory of a domain, for callers
// that want the raw files.
func SampleFS(name string) (fs.FS, error) {
	if _, ok := tableNames[name]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDomain, name)
	}
	return fs.Sub(sampleData, "sampledata/"+name)
}
