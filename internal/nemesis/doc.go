// Package nemesis runs real `seglog serve` processes under a nemesis
// (SIGKILL, SIGSTOP/SIGCONT, restart) while kgo writers produce with
// acks=all and idempotence, and checks the history afterwards: every
// acknowledged record read back exactly once at the offset it was
// acknowledged with, no value twice, no offset given to two values,
// nothing a consumer saw gone, replicas' partition directories identical
// batch by batch up to a given offset, and fsck clean after a clean stop
// (issue 30; ../shared/reference/kafka-replication.md §6).
//
// The checker (Check, CompareReplicas, FsckClean) is pure and tested on
// hand-made histories and directories, including ones that must fail.
// The processes (Proc, Cluster) are Linux only: they die with the test
// through Pdeathsig. TestNemesisSingleNode runs one broker;
// TestNemesisCluster runs three nodes with issue 30's command line
// (ServeArgs), faults one node at a time and compares the partition
// directories of the three with CompareReplicas up to each partition's
// high watermark. docs/reliability.md says how to run them longer.
package nemesis
