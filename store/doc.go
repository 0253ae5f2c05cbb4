// Package store holds topics, partitions and consumer groups in one data
// directory laid out as a Kafka log.dir: one seglog.Log per partition in a
// directory named topic-N, the log.dir-level offset checkpoints written the
// way a broker writes them, Kafka's default partitioner for keyed records,
// and each consumer group's committed offsets kept in an internal
// __consumer_offsets topic in Kafka's own record schemas. docs/store.md
// describes the layout and what is and is not Kafka-compatible.
package store
