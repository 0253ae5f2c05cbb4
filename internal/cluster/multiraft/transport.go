package multiraft

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The wire: after raftmux's header naming Config.Group, a connection
// carries frames one way, from the dialer to the listener, each
//
//	length (4 bytes, big endian: what follows) | group id (8 bytes, big endian) | raftpb.Message
//
// with 8 < length <= Config.MaxFrame. Each node dials each peer once and
// writes its messages there; what it receives comes on the connections its
// peers dialled. A frame too long or too short, or a message that does not
// decode, closes the connection (the peer's sender redials); a message for
// a group not on this node is dropped and counted.
const frameHeader = 4 + 8

// readChunk is how much a frame's body buffer grows at a time, so a peer
// announcing a long frame costs memory only as its bytes arrive.
const readChunk = 256 << 10

// keepBody is the largest frame buffer a connection's reader keeps for the
// next frame. Entries of up to a batch each (1 MiB by default) arrive
// frame after frame: a buffer grown afresh for each, a chunk at a time,
// cost the reader most of its CPU in copies and page faults. A frame
// longer than this (a snapshot, or a burst of entries) does not pin its
// buffer.
const keepBody = 4 << 20

// outBatch is one round's frames for a peer.
type outBatch struct {
	buf  []byte
	msgs int
}

// roundOut gathers a driver round's messages per peer. Driver goroutine
// only.
type roundOut struct {
	n    *Node
	per  map[uint64]*pending
	tmp  []byte
	used []uint64 // peers with something this round
}

type pending struct {
	b      outBatch
	groups map[uint64]bool // groups with messages in b
	snaps  map[uint64]bool // groups with a snapshot in b
}

func newRoundOut(n *Node) *roundOut {
	return &roundOut{n: n, per: map[uint64]*pending{}}
}

// add frames m for its peer.
func (o *roundOut) add(g *group, m *pb.Message) {
	to := m.GetTo()
	if o.n.peers[to] == nil {
		return // not a node this one knows: nothing to send it over
	}
	var err error
	o.tmp, err = proto.MarshalOptions{}.MarshalAppend(o.tmp[:0], m)
	if err != nil {
		// A message raft built always marshals; if not, raft treats a
		// lost message as the network's doing.
		return
	}
	if 8+len(o.tmp) > o.n.cfg.MaxFrame {
		// The peer would refuse the frame and the connection with it,
		// again at every retry; drop it here instead. Propose keeps
		// entries below the bound, so only a snapshot with data over it
		// gets here.
		o.n.peers[to].dropped.Add(1)
		if m.GetType() == pb.MessageType_MsgSnap {
			g.rn.ReportSnapshot(to, raft.SnapshotFailure)
		}
		return
	}
	pd := o.per[to]
	if pd == nil {
		pd = &pending{groups: map[uint64]bool{}, snaps: map[uint64]bool{}}
		o.per[to] = pd
	}
	if pd.b.msgs == 0 {
		o.used = append(o.used, to)
	}
	pd.b.buf = binary.BigEndian.AppendUint32(pd.b.buf, uint32(8+len(o.tmp)))
	pd.b.buf = binary.BigEndian.AppendUint64(pd.b.buf, g.id)
	pd.b.buf = append(pd.b.buf, o.tmp...)
	pd.b.msgs++
	pd.groups[g.id] = true
	if m.GetType() == pb.MessageType_MsgSnap {
		pd.snaps[g.id] = true
	}
}

// flush hands each peer its round's batch. A peer whose connection is down
// or whose queue is full loses the batch; its groups hear ReportUnreachable
// (and ReportSnapshot failure for a snapshot), so raft probes the peer
// gently and resends once it answers, rather than the driver waiting.
func (o *roundOut) flush() {
	for _, to := range o.used {
		pd := o.per[to]
		p := o.n.peers[to]
		if p.enqueue(pd.b) {
			for gid := range pd.snaps {
				if g := o.n.groups[gid]; g != nil {
					snapSent(g, to)
				}
			}
		} else {
			p.dropped.Add(uint64(pd.b.msgs))
			for gid := range pd.groups {
				if g := o.n.groups[gid]; g != nil {
					g.rn.ReportUnreachable(to)
					if pd.snaps[gid] {
						g.rn.ReportSnapshot(to, raft.SnapshotFailure)
					}
				}
			}
		}
		// The batch now belongs to the sender; start a fresh buffer.
		pd.b = outBatch{}
		clear(pd.groups)
		clear(pd.snaps)
	}
	o.used = o.used[:0]
}

// peer is the sending side of one peer: a bounded queue and the goroutine
// that keeps a connection to it.
type peer struct {
	n     *Node
	id    uint64
	addr  string
	queue chan outBatch
	up    atomic.Bool

	queued                  atomic.Int64 // bytes in queue
	dropped, sent, connects atomic.Uint64
}

func newPeer(n *Node, id uint64, addr string) *peer {
	return &peer{n: n, id: id, addr: addr, queue: make(chan outBatch, n.cfg.PeerQueue)}
}

// enqueue queues b for the peer without blocking; false if the peer has no
// connection or its queue is full.
func (p *peer) enqueue(b outBatch) bool {
	if !p.up.Load() {
		return false
	}
	// One batch over the bound still goes when nothing is queued, or a
	// round with that much to say could never say it.
	size := int64(len(b.buf))
	if after := p.queued.Add(size); after > size && after > int64(p.n.cfg.PeerQueueBytes) {
		p.queued.Add(-size)
		return false
	}
	select {
	case p.queue <- b:
		return true
	default:
		p.queued.Add(-size)
		return false
	}
}

// take is the sender's side of enqueue's byte count.
func (p *peer) take(b outBatch) outBatch {
	p.queued.Add(-int64(len(b.buf)))
	return b
}

// run connects to the peer, writes its queue, and reconnects with backoff
// after a failure, until the node closes.
func (p *peer) run() {
	defer p.n.wg.Done()
	const minBackoff = 10 * time.Millisecond
	backoff := minBackoff
	for {
		select {
		case <-p.n.stop:
			return
		default:
		}
		conn, err := p.n.layer.Dial(hraft.ServerAddress(p.addr), p.n.cfg.DialTimeout)
		if err == nil {
			p.connects.Add(1)
			backoff = minBackoff
			p.up.Store(true)
			p.serve(conn)
			p.up.Store(false)
			p.drain()
			// Groups leading this peer move it to probing and stop
			// streaming appends into a dead connection.
			select {
			case p.n.downs <- p.id:
			default:
			}
		}
		select {
		case <-p.n.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, p.n.cfg.MaxBackoff)
	}
}

// serve writes queued batches to conn until a write fails or times out, the
// peer hangs up, or the node closes.
func (p *peer) serve(conn net.Conn) {
	// The peer never writes on this connection; reading it notices the
	// peer's end closing (EOF) without waiting for a write to fail.
	hungUp := make(chan struct{})
	go func() {
		defer close(hungUp)
		_, _ = io.Copy(io.Discard, conn)
	}()
	defer func() {
		_ = conn.Close()
		<-hungUp
	}()
	var bufs net.Buffers
	for {
		var b outBatch
		select {
		case b = <-p.queue:
			p.take(b)
		case <-hungUp:
			return
		case <-p.n.stop:
			return
		}
		bufs, msgs := append(bufs[:0], b.buf), b.msgs
		for more := true; more && len(bufs) < 64; {
			select {
			case b := <-p.queue:
				p.take(b)
				bufs = append(bufs, b.buf)
				msgs += b.msgs
			default:
				more = false
			}
		}
		if err := conn.SetWriteDeadline(time.Now().Add(p.n.cfg.WriteTimeout)); err != nil {
			p.dropped.Add(uint64(msgs))
			return
		}
		if _, err := bufs.WriteTo(conn); err != nil {
			p.dropped.Add(uint64(msgs))
			return
		}
		p.sent.Add(uint64(msgs))
	}
}

// drain drops what was queued for a connection that is gone.
func (p *peer) drain() {
	for {
		select {
		case b := <-p.queue:
			p.take(b)
			p.dropped.Add(uint64(b.msgs))
		default:
			return
		}
	}
}

// acceptLoop reads every connection a peer opens to this node's group.
func (n *Node) acceptLoop() {
	defer n.wg.Done()
	for {
		conn, err := n.layer.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.readLoop(conn)
	}
}

// readLoop decodes conn's frames and hands them to the driver in batches of
// what arrived together. It blocks when the driver is behind, which pushes
// back on the peer through TCP; the peer's sender then drops, not its
// driver.
func (n *Node) readLoop(conn net.Conn) {
	defer n.wg.Done()
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	var hdr [frameHeader]byte
	var body []byte
	for {
		var batch []inbound
		for len(batch) < 1024 {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				if err == io.ErrUnexpectedEOF {
					n.badFrame.Add(1)
				}
				return
			}
			size := binary.BigEndian.Uint32(hdr[:4])
			if size <= 8 || uint64(size) > uint64(n.cfg.MaxFrame) {
				n.badFrame.Add(1)
				return
			}
			gid := binary.BigEndian.Uint64(hdr[4:])
			var err error
			if body, err = readBody(r, body[:0], int(size-8)); err != nil {
				return
			}
			m := new(pb.Message)
			if err := proto.Unmarshal(body, m); err != nil {
				n.badFrame.Add(1)
				return
			}
			if cap(body) > keepBody {
				body = nil // one very long frame does not pin its buffer
			}
			if n.group(gid) == nil {
				n.unknownGroup.Add(1)
			} else {
				batch = append(batch, inbound{group: gid, msg: m})
			}
			if r.Buffered() == 0 {
				break
			}
		}
		if len(batch) == 0 {
			continue
		}
		select {
		case n.inbox <- batch:
		case <-n.stop:
			return
		}
	}
}

// readBody reads size bytes into buf, growing it by at most readChunk ahead
// of what has arrived.
func readBody(r io.Reader, buf []byte, size int) ([]byte, error) {
	for len(buf) < size {
		k := min(size-len(buf), readChunk)
		buf = slices.Grow(buf, k)
		if _, err := io.ReadFull(r, buf[len(buf):len(buf)+k]); err != nil {
			return nil, err
		}
		buf = buf[:len(buf)+k]
	}
	return buf, nil
}
