// Package store holds topics, partitions and consumer groups in one data
// directory laid out as a Kafka log.dir: one seglog.Log per partition in a
// directory named topic-N, the log.dir-level offset checkpoints written the
// way a broker writes them, Kafka's default partitioner for keyed records,
// and each consumer group's committed offsets kept in an internal
// __consumer_offsets topic in Kafka's own record schemas. docs/store.md
// describes the layout and what is and is not Kafka-compatible.
//
// Start with Open, which creates or reopens a store and takes its lock, and
// Close. CreateTopic makes a topic (DefaultTopicConfig is Kafka's config);
// Produce writes records to it, Store.Log and Store.AcquireLog hand out a
// read-only seglog.View of a partition to read, and Commit and Position keep
// a consumer group's place. Start runs the cleaner (package cleaner:
// retention and compaction by each topic's config) in the background.
//
// A Store owns its partitions' seglog.Logs: callers get a View to read and a
// Writer to append, never the Log, so that only the store truncates, deletes
// or closes them. Package server serves a Store over Kafka's protocol.
package store
