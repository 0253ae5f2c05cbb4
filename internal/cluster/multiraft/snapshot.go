package multiraft

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	hraft "github.com/hashicorp/raft"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Snapshots whose data is the log. A partition's raft log is the partition
// itself, so a raft snapshot carries no data, only where it ends; a
// follower that gets one must first copy what it lacks from the snapshot's
// sender. The driver does that off its goroutine:
//
//   - A MsgSnap for a group whose Storage is a SnapshotReceiver that says
//     it needs the data is not stepped: a worker calls ReceiveSnapshot,
//     which pulls the data from the sender over the node's raftmux port
//     (group Config.Group+"-snap", one connection per transfer) and writes
//     it. Meanwhile the group is frozen: nothing is stepped into it, it is
//     not ticked and no Ready is handled, so raft reads and writes nothing
//     of a Storage the worker is changing. A transfer starts only when the
//     group has no Ready pending (every committed entry applied), and
//     another MsgSnap for the group while one runs is dropped.
//   - When it succeeds the driver steps the MsgSnap into raft, which then
//     finds the data present (Storage.ApplySnapshot, or the entries
//     themselves). When it fails the message is dropped; the leader, which
//     reported the snapshot finished once it was sent (ReportSnapshot),
//     probes the follower again and sends a new snapshot.
//   - A leader's Storage that is a SnapshotSender serves the pulls.
//
// The pull's wire: the follower writes one request frame
//
//	length (4, big endian) | group id (8) | request
//
// (8 < length <= snapReqMax) and the sender answers with frames
//
//	length (4) | kind (1) | payload
//
// (1 <= length <= Config.MaxFrame): kind snapData carries a payload for
// the receiver, snapEnd ends a successful answer, snapFail ends a failed
// one with the reason. A length out of bounds closes the connection before
// anything is allocated for it.

// SnapshotReceiver is implemented by a Storage whose snapshots need data
// copied from their sender before raft can take them.
type SnapshotReceiver interface {
	// SnapshotNeedsData reports whether snap, just received, needs data
	// from its sender. On the driver goroutine: it must be quick.
	SnapshotNeedsData(snap *pb.Snapshot) bool
	// ReceiveSnapshot copies snap's data, calling fetch to pull it from
	// the sender, and returns once what raft needs to take snap is
	// durable. It runs off the driver goroutine while the group is frozen
	// (nothing else reads or writes the Storage for it).
	ReceiveSnapshot(ctx context.Context, snap *pb.Snapshot, fetch FetchFunc) error
}

// FetchFunc sends req to the snapshot's sender and hands recv each
// payload of its answer, in order, until the sender ends it: nil when it
// ends well, the sender's reason or the transport's error otherwise, or
// recv's own error, which stops the pull.
type FetchFunc func(ctx context.Context, req []byte, recv func(payload []byte) error) error

// SnapshotSender is implemented by a Storage that serves the data of its
// snapshots to a follower.
type SnapshotSender interface {
	// ServeSnapshot answers req, calling send with each payload (at most
	// MaxSnapshotPayload bytes). It runs beside the driver's writes.
	ServeSnapshot(ctx context.Context, req []byte, send func(payload []byte) error) error
}

// Frame kinds of a snapshot pull's answer.
const (
	snapData byte = 1
	snapEnd  byte = 2
	snapFail byte = 3
)

// snapReqMax bounds a pull's request frame.
const snapReqMax = 4 << 10

// MaxSnapshotPayload is the largest payload a SnapshotSender may send:
// a frame of DefaultMaxFrame, less its envelope. A receiver refuses a
// longer frame, whatever it announces.
const MaxSnapshotPayload = DefaultMaxFrame - frameOverhead

// snapshotIdle bounds the wait for one frame of a pull, and for one write
// of an answer: a sender or receiver that stops for that long ends it.
const snapshotIdle = 30 * time.Second

// maxServing bounds the pulls a node serves at once, so that followers
// catching up together cannot take all its disk and memory.
const maxServing = 4

// startFetch freezes g and runs the pull for m, a MsgSnap, on a worker;
// the driver steps m once it is done. Driver goroutine.
func (n *Node) startFetch(g *group, rcv SnapshotReceiver, m *pb.Message) {
	g.fetching = true
	n.snapsStarted.Add(1)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-n.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		from := m.GetFrom()
		err := rcv.ReceiveSnapshot(ctx, m.GetSnapshot(), func(ctx context.Context, req []byte, recv func([]byte) error) error {
			return n.fetch(ctx, from, g.id, req, recv)
		})
		done := func() { n.fetched(g, m, err) }
		select {
		case n.ops <- done:
		case <-n.stop:
		}
	}()
}

// fetched ends g's transfer: on success m is stepped into raft now that
// the data is there; on failure it is dropped and raft sends another
// snapshot. Driver goroutine.
func (n *Node) fetched(g *group, m *pb.Message, err error) {
	g.fetching = false
	if n.groups[g.id] != g {
		return // removed meanwhile
	}
	if err != nil {
		n.snapsFailed.Add(1)
		n.cfg.Log.Warn("multiraft: copying a snapshot failed", "group", g.id, "index", m.GetSnapshot().GetMetadata().GetIndex(), "from", m.GetFrom(), "err", err)
	} else {
		n.snapsDone.Add(1)
		_ = g.rn.Step(m)
	}
	n.mark(g)
}

// fetch dials node from's snapshot port, sends the request for group and
// hands recv each payload of the answer.
func (n *Node) fetch(ctx context.Context, from, group uint64, req []byte, recv func([]byte) error) error {
	p := n.peers[from]
	if p == nil {
		return fmt.Errorf("multiraft: node %d is not a peer", from)
	}
	if len(req) > snapReqMax-8 {
		return fmt.Errorf("multiraft: snapshot request of %d bytes", len(req))
	}
	conn, err := n.snapLayer.Dial(hraft.ServerAddress(p.addr), n.cfg.DialTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	head := binary.BigEndian.AppendUint32(nil, uint32(8+len(req)))
	head = binary.BigEndian.AppendUint64(head, group)
	if err := conn.SetWriteDeadline(time.Now().Add(snapshotIdle)); err != nil {
		return err
	}
	if _, err := (&net.Buffers{head, req}).WriteTo(conn); err != nil {
		return ctxErr(ctx, err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	var hdr [5]byte
	var body []byte
	for {
		if err := conn.SetReadDeadline(time.Now().Add(snapshotIdle)); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return ctxErr(ctx, fmt.Errorf("multiraft: snapshot answer from node %d: %w", from, err))
		}
		size := binary.BigEndian.Uint32(hdr[:4])
		if size < 1 || uint64(size) > uint64(n.cfg.MaxFrame) {
			return fmt.Errorf("multiraft: snapshot answer from node %d: a frame of %d bytes", from, size)
		}
		if body, err = readBody(r, body[:0], int(size-1)); err != nil {
			return ctxErr(ctx, fmt.Errorf("multiraft: snapshot answer from node %d: %w", from, err))
		}
		switch hdr[4] {
		case snapData:
			if err := recv(body); err != nil {
				return err
			}
		case snapEnd:
			return nil
		case snapFail:
			return fmt.Errorf("multiraft: node %d refused the snapshot pull: %s", from, body)
		default:
			return fmt.Errorf("multiraft: snapshot answer from node %d: frame kind %d", from, hdr[4])
		}
		if cap(body) > readChunk {
			body = nil
		}
	}
}

// ctxErr prefers ctx's error (the node closing) to the transport's.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// serveSnapshots answers the pulls peers make of this node.
func (n *Node) serveSnapshots() {
	defer n.wg.Done()
	slots := make(chan struct{}, maxServing)
	for {
		conn, err := n.snapLayer.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			// Busy: the follower's pull fails and raft tries again.
			_ = conn.Close()
			continue
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			defer func() { <-slots }()
			n.serveSnapshot(conn)
		}()
	}
}

// serveSnapshot answers one pull.
func (n *Node) serveSnapshot(conn net.Conn) {
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			_ = conn.Close()
		case <-ctx.Done():
		}
	}()
	if err := conn.SetReadDeadline(time.Now().Add(snapshotIdle)); err != nil {
		return
	}
	var hdr [4]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size <= 8 || size > snapReqMax {
		return
	}
	req := make([]byte, size)
	if _, err := io.ReadFull(conn, req); err != nil {
		return
	}
	w := bufio.NewWriterSize(conn, 64<<10)
	write := func(kind byte, payload []byte) error {
		if err := conn.SetWriteDeadline(time.Now().Add(snapshotIdle)); err != nil {
			return err
		}
		var h [5]byte
		binary.BigEndian.PutUint32(h[:4], uint32(1+len(payload)))
		h[4] = kind
		if _, err := w.Write(h[:]); err != nil {
			return err
		}
		_, err := w.Write(payload)
		return err
	}
	gid := binary.BigEndian.Uint64(req)
	var err error
	g := n.group(gid)
	snd, ok := Storage(nil), false
	if g != nil {
		snd = g.storage
		_, ok = snd.(SnapshotSender)
	}
	switch {
	case g == nil:
		err = fmt.Errorf("group %d is not on node %d", gid, n.cfg.ID)
	case !ok:
		err = fmt.Errorf("group %d does not serve snapshot data", gid)
	default:
		err = snd.(SnapshotSender).ServeSnapshot(ctx, req[8:], func(payload []byte) error {
			if len(payload) > min(MaxSnapshotPayload, n.cfg.MaxFrame-1) {
				return fmt.Errorf("multiraft: a snapshot payload of %d bytes", len(payload))
			}
			return write(snapData, payload)
		})
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > 1024 {
			msg = msg[:1024]
		}
		_ = write(snapFail, []byte(msg))
	} else {
		_ = write(snapEnd, nil)
	}
	_ = w.Flush()
}

// snapSent tells raft that the snapshot for peer to went on the wire:
// etcd's "finish" moves the follower to probing, so if the follower drops
// it (a failed pull) the leader finds out at its next probe and sends
// another, rather than waiting for an answer that never comes.
func snapSent(g *group, to uint64) { g.rn.ReportSnapshot(to, raft.SnapshotFinish) }
