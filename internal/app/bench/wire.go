package bench

import (
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// Wire is what one of the pipeline's connections exchanged with the
// embedded server per turn over the run: In counts the protocol messages
// it sent (publishes, acknowledgements of deliveries, pull and API
// requests), Out those it received (deliveries, acknowledgements of its
// publishes, replies, heartbeats). Conn is the connection's name less
// the process's ("detector", "agentworker"; "driver" is the bench's own).
type Wire struct {
	Conn string  `json:"conn"`
	In   float64 `json:"in"`
	Out  float64 `json:"out"`
}

// wireCounts reads every client connection's message counts, by name.
func wireCounts(srv *server.Server) map[string][2]int64 {
	if srv == nil {
		return nil
	}
	cz, err := srv.Connz(&server.ConnzOptions{Limit: 1 << 16})
	if err != nil {
		return nil
	}
	out := make(map[string][2]int64, len(cz.Conns))
	for _, c := range cz.Conns {
		n := out[c.Name]
		out[c.Name] = [2]int64{n[0] + c.InMsgs, n[1] + c.OutMsgs}
	}
	return out
}

// wirePerTurn is the difference of two readings per turn, by connection,
// the stages first in name order and the bench's own connection last.
func wirePerTurn(before, after map[string][2]int64, process string, turns int) []Wire {
	if before == nil || after == nil || turns == 0 {
		return nil
	}
	var out []Wire
	var driver *Wire
	for name, a := range after {
		b := before[name]
		w := Wire{Conn: strings.TrimPrefix(strings.TrimPrefix(name, process), "-"),
			In: float64(a[0]-b[0]) / float64(turns), Out: float64(a[1]-b[1]) / float64(turns)}
		if w.In == 0 && w.Out == 0 {
			continue
		}
		if name == process {
			w.Conn = "driver"
			driver = &w
			continue
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Conn < out[j].Conn })
	if driver != nil {
		out = append(out, *driver)
	}
	return out
}
