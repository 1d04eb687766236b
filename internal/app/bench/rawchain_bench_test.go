package bench

import (
	"context"
	"testing"
)

// BenchmarkRawChain reports the raw three-hop JetStream throughput.
func BenchmarkRawChain(b *testing.B) {
	for i := 0; i < b.N; i++ {
		res, err := RunRawChain(context.Background(), b.TempDir(), 30000, 700)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.MsgsPerSec, "msgs/s")
		b.ReportMetric(res.P99Ms, "p99_ms")
	}
}
