package server

import "sync"

// framePool keeps Produce request frames between requests, for any
// connection to read its next request into (conn.go, "Request frames").
//
// It is not a sync.Pool: a frame is given back by the goroutine answering
// a request and taken by another, the connection's reader, usually on the
// other core, and a sync.Pool hands a goroutine what was put on its own P
// first, so most frames were never found again (measured: 32 of 40
// requests read into fresh memory). What it holds is bounded by
// framePoolBytes and framePoolFrames, so a burst of producers leaves at
// most that much behind.
type framePool struct {
	mu     sync.Mutex
	frames [][]byte // in no order: get searches them all for the best fit
	bytes  int      // the capacity of frames, summed
}

// The pool's bounds: room for the requests a few busy producers have in
// flight, and a small part of a broker's memory.
const (
	framePoolBytes  = 64 << 20
	framePoolFrames = 64
	// maxReusedFrame bounds the frames the pool keeps. kgo fills a
	// request with up to 1 MB per partition (ProducerBatchMaxBytes), so a
	// producer that is behind sends about 12 MB to a 12-partition topic
	// (measured: 11.7-12.0 MB); a request near MaxRequestBytes (100 MiB
	// by default) is rare, and is not kept.
	maxReusedFrame = 16 << 20
)

// get returns a frame of size bytes from the pool, or nil if it holds none
// large enough. The smallest that fits is taken, so that a small request
// does not take the frame a larger one needs.
func (p *framePool) get(size int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, f := range p.frames {
		if cap(f) >= size && (best < 0 || cap(f) < cap(p.frames[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	f := p.frames[best]
	last := len(p.frames) - 1
	p.frames[best] = p.frames[last]
	p.frames[last] = nil
	p.frames = p.frames[:last]
	p.bytes -= cap(f)
	return f[:size]
}

// frameCap is the capacity a new frame of size bytes is made with: the
// next power of two, so that a producer's requests, whose sizes vary with
// how many records came while the last one was in flight, fit the frames
// of its earlier ones.
func frameCap(size int) int {
	c := minPooledFrame
	for c < size {
		c <<= 1
	}
	return c
}

// put gives a frame back once nothing refers to it. A frame over the
// bounds is dropped for the collector.
func (p *framePool) put(f []byte) {
	if f == nil || cap(f) > maxReusedFrame {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.frames) >= framePoolFrames || p.bytes+cap(f) > framePoolBytes {
		return
	}
	p.frames = append(p.frames, f[:0])
	p.bytes += cap(f)
}
