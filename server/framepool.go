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
	frames [][]byte // most recently given back last
	bytes  int      // the capacity of frames, summed
}

// The pool's bounds: room for the requests a few dozen busy producers
// have in flight, and a small part of a broker's memory.
const (
	framePoolBytes  = 32 << 20
	framePoolFrames = 64
	// maxReusedFrame bounds the frames the pool keeps: a request near
	// MaxRequestBytes (100 MiB by default) is rare, and should not be
	// kept.
	maxReusedFrame = 8 << 20
)

// get returns a frame of size bytes from the pool, or nil if it holds none
// large enough. The most recently given back fitting frame is taken: its
// memory is the likeliest to be in the cache.
func (p *framePool) get(size int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.frames) - 1; i >= 0; i-- {
		if f := p.frames[i]; cap(f) >= size {
			last := len(p.frames) - 1
			p.frames[i] = p.frames[last]
			p.frames[last] = nil
			p.frames = p.frames[:last]
			p.bytes -= cap(f)
			return f[:size]
		}
	}
	return nil
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
