// Package natsserver starts rein's embedded nats-server (server.go, its
// configuration for an external server in serverconf.go, live reloads of
// tenant identities in server_reload.go), holds the identities and what
// each may do on the bus, and provisions the streams and buckets
// idempotently (provision.go, provision_apply.go). health.go reports a
// stream's replicas and answers the readiness probe. The process running
// the embedded server holds DATA-DIR/rein.lock (LockDataDir). Connect
// (connect.go) opens rein's connections; one to the embedded server in
// the same process goes through a buffer each way (inprocess.go), since
// the server's in-process pipe makes every write wait for the reader.
//
// Consumes and produces no stream of its own: it creates them, and the
// JetStream API of provisioning is the admin identity's.
//
// # Trust on the bus
//
// The embedded server never runs without authentication. EnsureKeyring
// (credentials.go) generates, on first start, one nkey per identity under
// <data dir>/nats-keys (0700, seeds 0600): admin (provisioning and the CLI
// tools), ingress, detector (which stores each detection with its task),
// injector (the sidecar responder), agentworker and escalation, plus one
// ingress-<tenant> identity per tenant added with AddTenantIngress.
// permissions.go is the one table of what each may publish and subscribe
// to, built from the names in streams/bus: a stage publishes only what it
// produces (and its own rein.dlq.<stage>), holds the JetStream API of its
// own durable only (create, info, next, unpin, its $JS.ACK subjects), gets
// and reads only the streams it reads, and takes replies on _INBOX.>; a
// tenant's ingress identity stores only rein.turns.<tenant>.<conv>.<role>. A
// non-loopback client port needs TLS (ServerConfig.TLSCert) unless
// explicitly insecure.
//
// # Replication
//
// ProvisionConfig sets each stream's replicas and placement (cluster,
// server tags) and the bucket's replicas (kv_replicas); rein serve's
// --stream-replicas, --kv-replicas and --placement-tags override them.
// Provision (provision_apply.go) creates each stream or brings it to its
// configuration, but never lowers an existing stream's replicas nor drops
// its placement: a process started with fewer keeps what the stream has
// and logs it. It retries, with jittered backoff until its context ends,
// what a cluster that is starting or placing replicas answers (timeouts,
// no meta leader, insufficient resources, a concurrent create), so many
// processes may start together on a fresh cluster; more than one replica
// on a server outside a cluster is ErrReplicasUnavailable, naming the fix.
// A stage's durable consumer is created under the same retries
// (EnsureConsumer).
// Status reports a stream's replicas, leader and the other replicas'
// state; CheckWritable (health.go) is the readiness probe: streams.ErrNoLeader
// when a stream has no leader or JetStream does not answer in time.
package natsserver
