// Package localcluster starts a real JetStream cluster of embedded
// nats-servers inside one process, on loopback, in nats-server's own
// test style: each node with its own client and route ports, its own store
// directory and routes to every other node. Nodes can be stopped and
// started again on the same ports and storage. `rein bench --cluster` runs
// on it and internal/testutil wraps it for the cluster tests.
//
// It consumes and produces nothing itself (the servers carry whatever
// clients publish) and exports no metrics.
package localcluster
