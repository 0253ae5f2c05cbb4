package multiraft

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/reach"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The wire: after raftmux's header naming Config.Group, a connection
// carries frames one way, from the dialer to the listener, each
//
//	length (4 bytes, big endian: what follows) | group id (8 bytes, big endian) |
//	n (4 bytes) | n data lengths (4 bytes each) |
//	raftpb.Message, its n entries without their Data | the n entries' Data, in order
//
// with 8 < length <= Config.MaxFrame. The entries' Data travel outside the
// protobuf so that neither side copies them: the sender writes raft's own
// slices (writev), and the receiver reads each into a buffer of its own
// that becomes the entry's Data (a protobuf decode would copy every byte
// of a 1 MiB batch once more; the two copies cost a fifth of a replicated
// write's CPU, docs/benchmarks.md "Cluster"). Each node dials each peer
// once and writes its messages there; what it receives comes on the
// connections its peers dialled. A frame too long or too short, lengths
// that do not add up, or a message that does not decode, closes the
// connection (the peer's sender redials); a message for a group not on
// this node is dropped and counted.
const frameHeader = 4 + 8

// readChunk is how much a frame's body buffer grows at a time, so a peer
// announcing a long frame costs memory only as its bytes arrive.
const readChunk = 256 << 10

// dataChunk is the most an entry's Data buffer is given before its bytes
// arrive: a batch of up to 1 MiB (the default MaxSizePerMsg) and its
// envelope fit at once, read without a copy; a longer one grows as it
// comes.
const dataChunk = 1<<20 + 64<<10

// keepBody is the largest frame buffer a connection's reader keeps for the
// next frame. A frame longer than this (a snapshot's metadata, a burst of
// entry headers) does not pin its buffer.
const keepBody = 4 << 20

// outBatch is one round's frames for a peer: headers and the entries'
// Data, written with one writev.
type outBatch struct {
	bufs net.Buffers
	size int
	msgs int
}

// roundOut gathers a driver round's messages per peer. Driver goroutine
// only.
type roundOut struct {
	n    *Node
	per  map[uint64]*pending
	used []uint64 // peers with something this round
	// stripped holds the entry headers (no Data) a message is encoded
	// with, reused from message to message.
	stripped []*pb.Entry
}

type pending struct {
	b      outBatch
	groups map[uint64]bool // groups with messages in b
	snaps  map[uint64]bool // groups with a snapshot in b
}

func newRoundOut(n *Node) *roundOut {
	return &roundOut{n: n, per: map[uint64]*pending{}}
}

// add frames m for its peer: a header with the message and its entries'
// lengths, then the entries' Data as raft holds them (raft never changes
// an entry's Data once it is in its log, and nor does this package, so
// the sender may write them after the round).
func (o *roundOut) add(g *group, m *pb.Message) {
	to := m.GetTo()
	if o.n.peers[to] == nil {
		return // not a node this one knows: nothing to send it over
	}
	hdr, size, ok := o.frame(g.id, m)
	if !ok {
		// A message raft built always marshals; if not, raft treats a
		// lost message as the network's doing.
		return
	}
	if size-4 > o.n.cfg.MaxFrame {
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
	pd.b.bufs = append(pd.b.bufs, hdr)
	for _, e := range m.GetEntries() {
		if d := e.GetData(); len(d) > 0 {
			pd.b.bufs = append(pd.b.bufs, d)
		}
	}
	pd.b.size += size
	pd.b.msgs++
	pd.groups[g.id] = true
	if m.GetType() == pb.MessageType_MsgSnap {
		pd.snaps[g.id] = true
	}
}

// frame encodes m's frame header (everything but its entries' Data) for
// group gid, and returns it with the whole frame's size. m is left as it
// was: it is encoded with headers of its entries in their place.
func (o *roundOut) frame(gid uint64, m *pb.Message) (hdr []byte, size int, ok bool) {
	ents := m.GetEntries()
	data := 0
	for len(o.stripped) < len(ents) {
		o.stripped = append(o.stripped, new(pb.Entry))
	}
	stripped := o.stripped[:len(ents)]
	for i, e := range ents {
		data += len(e.GetData())
		stripped[i].Term, stripped[i].Index, stripped[i].Type = e.Term, e.Index, e.Type
	}
	m.Entries = stripped
	msgLen := proto.Size(m)
	head := frameHeader + 4 + 4*len(ents)
	hdr = make([]byte, head, head+msgLen)
	binary.BigEndian.PutUint32(hdr, uint32(head-4+msgLen+data))
	binary.BigEndian.PutUint64(hdr[4:], gid)
	binary.BigEndian.PutUint32(hdr[frameHeader:], uint32(len(ents)))
	for i, e := range ents {
		binary.BigEndian.PutUint32(hdr[frameHeader+4+4*i:], uint32(len(e.GetData())))
	}
	hdr, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(hdr, m)
	m.Entries = ents
	for _, e := range stripped {
		e.Term, e.Index, e.Type = nil, nil, nil // raft's values are not held
	}
	if err != nil {
		return nil, 0, false
	}
	return hdr, len(hdr) + data, true
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
	size := int64(b.size)
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
	p.queued.Add(-int64(b.size))
	return b
}

// run connects to the peer, writes its queue, and reconnects with backoff
// after a failure, until the node closes.
func (p *peer) run() {
	defer p.n.wg.Done()
	const minBackoff = 10 * time.Millisecond
	backoff := minBackoff
	broke := false // a connection that was up broke, and no dial since was refused
	for {
		select {
		case <-p.n.stop:
			return
		default:
		}
		conn, err := p.n.layer.Dial(hraft.ServerAddress(p.addr), p.n.cfg.DialTimeout)
		if err != nil {
			p.n.cfg.Reach.Failed(p.id, p.addr, reach.HungUp(err)) // a reset while writing the header
			if broke && refused(err) {
				broke = false
				select {
				case p.n.gone <- p.id:
				default:
				}
			}
		} else {
			p.connects.Add(1)
			backoff = minBackoff
			p.up.Store(true)
			p.report(p.serve(conn))
			p.up.Store(false)
			p.drain()
			broke = true
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

// heldFor is how long a connection to a peer must stay open to count as
// reaching it (Config.Reach). The peer never answers on it, so a dial
// that succeeds proves only that something listens: a raftmux port that
// does not serve this group closes it (within its UnknownGroupWait,
// 500 ms), and so does another service given the raftmux header (a
// Kafka port reads it as a request too long). A seglog node's port holds
// it.
const heldFor = time.Second

// served is how a connection to a peer ended: early is set when it ended
// within heldFor of being opened, and err says why (nil when the node
// closed).
type served struct {
	early bool
	err   error
}

// report tells Config.Reach how a connection ended: one the peer closed
// early did not reach it. One held longer was reported connected once
// held (serve), and reached the peer until now: the last reached time a
// later failure's Warn gives is when the connection ended, not when it
// was opened (a walk read a node's last contact with a peer as 48 s
// before it had actually stopped talking to it).
func (p *peer) report(s served) {
	switch {
	case s.early && s.err != nil:
		p.n.cfg.Reach.Failed(p.id, p.addr, s.err)
	case !s.early:
		p.n.cfg.Reach.Connected(p.id, p.addr)
	}
}

// serve writes queued batches to conn until a write fails or times out, the
// peer hangs up, or the node closes.
func (p *peer) serve(conn net.Conn) (out served) {
	// The peer never writes on this connection; reading it notices the
	// peer's end closing (EOF) without waiting for a write to fail.
	hungUp := make(chan struct{})
	var readErr error
	go func() {
		defer close(hungUp)
		_, readErr = io.Copy(io.Discard, conn)
		if readErr == nil {
			readErr = io.EOF // io.Copy's clean end is the peer's close
		}
	}()
	held := time.AfterFunc(heldFor, func() { p.n.cfg.Reach.Connected(p.id, p.addr) })
	defer func() {
		out.early = held.Stop()
		_ = conn.Close()
		<-hungUp
	}()
	w := vectorWriter(conn)
	var vec net.Buffers
	for {
		var b outBatch
		select {
		case b = <-p.queue:
			p.take(b)
		case <-hungUp:
			return served{err: reach.HungUp(readErr)}
		case <-p.n.stop:
			return served{}
		}
		vec = append(vec[:0], b.bufs...)
		msgs := b.msgs
		for more := true; more && len(vec) < 1024; {
			select {
			case b := <-p.queue:
				p.take(b)
				vec = append(vec, b.bufs...)
				msgs += b.msgs
			default:
				more = false
			}
		}
		if err := conn.SetWriteDeadline(time.Now().Add(p.n.cfg.WriteTimeout)); err != nil {
			p.dropped.Add(uint64(msgs))
			return served{err: err}
		}
		bufs := vec // WriteTo consumes its receiver; vec keeps the array
		_, err := bufs.WriteTo(w)
		clear(vec) // the entries' Data are not held past their write
		if err != nil {
			p.dropped.Add(uint64(msgs))
			return served{err: reach.HungUp(err)}
		}
		p.sent.Add(uint64(msgs))
	}
}

// vectorWriter is what serve writes a round's buffers to: the connection
// under raftmux's (NetConn), when there is one, because net.Buffers uses
// writev only on the net package's own connections and makes one write
// call per buffer on any other (a frame's header and each entry's Data:
// 4,100 writes a round of the cluster bench, docs/benchmarks.md
// "Cluster", seventh session). Deadlines set on conn are the same
// connection's.
func vectorWriter(conn net.Conn) io.Writer {
	if u, ok := conn.(interface{ NetConn() net.Conn }); ok {
		return u.NetConn()
	}
	return conn
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
	var body []byte
	for {
		var batch []inbound
		for len(batch) < 1024 {
			gid, m, err := n.readFrame(r, &body)
			if err != nil {
				if !errors.Is(err, io.EOF) && !isNetErr(err) {
					n.badFrame.Add(1)
				}
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

// errBadFrame is a frame that breaks the wire's rules; the connection
// ends.
var errBadFrame = errors.New("multiraft: bad frame")

// isNetErr reports an error of the connection itself (a peer gone, a
// deadline), which is no fault of a frame.
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// readFrame reads one frame: the message into *body (reused from frame
// to frame), each entry's Data into a buffer of its own. Every length is
// checked against what the frame's length leaves before anything is
// allocated for it, and buffers grow only as bytes arrive. A frame cut
// short is io.ErrUnexpectedEOF; a clean end between frames io.EOF.
func (n *Node) readFrame(r *bufio.Reader, body *[]byte) (uint64, *pb.Message, error) {
	var hdr [frameHeader + 4]byte
	if _, err := io.ReadFull(r, hdr[:frameHeader]); err != nil {
		return 0, nil, err
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if size <= 8+4 || uint64(size) > uint64(n.cfg.MaxFrame) {
		return 0, nil, errBadFrame
	}
	gid := binary.BigEndian.Uint64(hdr[4:])
	if _, err := io.ReadFull(r, hdr[frameHeader:]); err != nil {
		return 0, nil, unexpected(err)
	}
	left := uint64(size) - 8 - 4
	count := uint64(binary.BigEndian.Uint32(hdr[frameHeader:]))
	if 4*count > left {
		return 0, nil, errBadFrame
	}
	lens, err := readBody(r, (*body)[:0], int(4*count))
	if err != nil {
		return 0, nil, unexpected(err)
	}
	left -= 4 * count
	sizes := make([]int, count)
	for i := range sizes {
		l := uint64(binary.BigEndian.Uint32(lens[4*i:]))
		if l > left {
			return 0, nil, errBadFrame
		}
		sizes[i] = int(l)
		left -= l
	}
	msg, err := readBody(r, lens[:0], int(left))
	if err != nil {
		return 0, nil, unexpected(err)
	}
	*body = msg
	m := new(pb.Message)
	if err := proto.Unmarshal(msg, m); err != nil {
		return 0, nil, errBadFrame
	}
	ents := m.GetEntries()
	if uint64(len(ents)) != count {
		return 0, nil, errBadFrame
	}
	for i, e := range ents {
		if len(e.GetData()) > 0 {
			return 0, nil, errBadFrame // Data comes after the message only
		}
		if sizes[i] == 0 {
			continue
		}
		// A buffer of its own, which the entry keeps: raft's log, the
		// Storage and its cache hold it from here on.
		d, err := readBody(r, make([]byte, 0, min(sizes[i], dataChunk)), sizes[i])
		if err != nil {
			return 0, nil, unexpected(err)
		}
		e.Data = d
	}
	return gid, m, nil
}

// unexpected is a read's error inside a frame: an end there cuts the
// frame short.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readBody reads size bytes into buf, growing it by at most readChunk ahead
// of what has arrived (after what buf has room for already).
func readBody(r io.Reader, buf []byte, size int) ([]byte, error) {
	for len(buf) < size {
		k := min(size-len(buf), max(readChunk, cap(buf)-len(buf)))
		buf = slices.Grow(buf, k)
		if _, err := io.ReadFull(r, buf[len(buf):len(buf)+k]); err != nil {
			return nil, err
		}
		buf = buf[:len(buf)+k]
	}
	return buf, nil
}
