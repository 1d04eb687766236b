// Package convcache is the bounded in-memory cache of per-conversation
// state that the detector and the agent workers keep: the consume loop gives
// each conversation one writer, the cache bounds how many conversations are
// held and, with LimitBytes, the bytes their states hold by a measure the
// stage gives (least recently used dropped first), and drops those idle
// longer than a TTL. A dropped conversation is rebuilt by its stage from JetStream. It
// consumes and produces nothing and exports no metrics.
package convcache
