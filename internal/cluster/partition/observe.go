package partition

import (
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/cluster/replica"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
)

// SetObserver sets the observer the replicas report their writes to
// (server.LogObserver): the server keeps its producer state from them on
// every replica. Partitions opened before it report to it from then on;
// what they stored earlier is in their logs, which the server reads.
func (m *Manager) SetObserver(o server.LogObserver) { m.observer.Store(&o) }

// TopicDeleted tells the observer that the store no longer holds topic:
// the cluster deleted it (server.LogObserver's TopicDeleted).
func (m *Manager) TopicDeleted(topic string) {
	if obs := m.logObserver(); obs != nil {
		obs.TopicDeleted(topic)
	}
}

func (m *Manager) logObserver() server.LogObserver {
	if o := m.observer.Load(); o != nil {
		return *o
	}
	return nil
}

// observed is the replica.Partition a replica Store writes through: the
// store's partition, reporting each change to the Manager's observer.
// Appends are reported at the Sync that makes them durable (a Store syncs
// after each write), so an observer that writes a producer snapshot at a
// roll never names one past what a crash keeps; truncations before they
// happen, so that an observer removes what describes the removed records
// before they go. A write that fails is reported as a change appends do
// not describe (Truncating at 0). Called under the Store's write lock,
// which orders the reports.
type observed struct {
	store.Writer
	m         *Manager
	topic     string
	partition int32
	// unsynced is the batches appended since the last Sync.
	unsynced [][]byte
}

var _ replica.Partition = (*observed)(nil)

func (o *observed) AppendEpochBatches(epochs []int32, batches [][]byte) ([]seglog.AppendInfo, error) {
	infos, err := o.Writer.AppendEpochBatches(epochs, batches)
	o.appended(batches[:len(infos)], err)
	return infos, err
}

func (o *observed) AppendAsFollower(batches [][]byte) ([]seglog.AppendInfo, error) {
	infos, err := o.Writer.AppendAsFollower(batches)
	o.appended(batches[:len(infos)], err)
	return infos, err
}

func (o *observed) appended(batches [][]byte, err error) {
	if err != nil {
		o.unsynced = nil
		o.truncating(0)
		return
	}
	o.unsynced = append(o.unsynced, batches...)
}

func (o *observed) Sync() error {
	err := o.Writer.Sync()
	batches := o.unsynced
	o.unsynced = nil
	switch obs := o.m.logObserver(); {
	case obs == nil:
	case err != nil:
		obs.Truncating(o.topic, o.partition, 0)
	case len(batches) > 0:
		obs.Appended(o.topic, o.partition, batches)
	}
	return err
}

func (o *observed) TruncateTo(offset int64) error {
	o.unsynced = nil
	o.truncating(offset)
	return o.Writer.TruncateTo(offset)
}

func (o *observed) RestartAt(offset int64) error {
	o.unsynced = nil
	o.truncating(0)
	return o.Writer.RestartAt(offset)
}

func (o *observed) truncating(offset int64) {
	if obs := o.m.logObserver(); obs != nil {
		obs.Truncating(o.topic, o.partition, offset)
	}
}
