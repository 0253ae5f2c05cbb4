package server

import "testing"

// TestFramePool: a frame comes back only to a request it fits, the
// smallest that fits first, at the size asked for; the pool never holds
// more than its bounds, nor a frame over maxReusedFrame.
func TestFramePool(t *testing.T) {
	var p framePool
	if f := p.get(10); f != nil {
		t.Fatalf("an empty pool gave a frame of cap %d", cap(f))
	}
	small, large := make([]byte, 100), make([]byte, 1000)
	p.put(small)
	p.put(large)
	if f := p.get(500); cap(f) != 1000 || len(f) != 500 {
		t.Fatalf("get(500) = len %d cap %d, want the 1000-byte frame at 500", len(f), cap(f))
	}
	if f := p.get(500); f != nil {
		t.Fatalf("the 1000-byte frame was handed out twice (or the 100-byte one for 500 bytes): cap %d", cap(f))
	}
	p.put(large)
	if f := p.get(50); cap(f) != 100 {
		t.Fatalf("get(50) = cap %d, want the 100-byte frame: the smallest that fits", cap(f))
	}
	if f := p.get(50); cap(f) != 1000 {
		t.Fatalf("get(50) = cap %d, want the 1000-byte frame", cap(f))
	}

	p.put(make([]byte, maxReusedFrame+1))
	if len(p.frames) != 0 {
		t.Fatalf("a frame over maxReusedFrame was kept")
	}
	for range framePoolFrames + 10 {
		p.put(make([]byte, 10))
	}
	if len(p.frames) != framePoolFrames {
		t.Fatalf("pool holds %d frames, bound %d", len(p.frames), framePoolFrames)
	}
	p = framePool{}
	for range framePoolBytes/maxReusedFrame + 2 {
		p.put(make([]byte, maxReusedFrame))
	}
	if p.bytes > framePoolBytes || p.bytes != len(p.frames)*maxReusedFrame {
		t.Fatalf("pool holds %d bytes in %d frames, bound %d", p.bytes, len(p.frames), framePoolBytes)
	}
	for len(p.frames) > 0 {
		p.get(1)
	}
	if p.bytes != 0 {
		t.Fatalf("an emptied pool counts %d bytes", p.bytes)
	}
}

// TestFrameCap: new frames are made a power of two (at least
// minPooledFrame) large, so a later, somewhat larger request fits them.
func TestFrameCap(t *testing.T) {
	for _, c := range []struct{ size, want int }{
		{1, minPooledFrame}, {minPooledFrame, minPooledFrame}, {minPooledFrame + 1, 2 * minPooledFrame},
		{300 << 10, 512 << 10}, {512 << 10, 512 << 10}, {maxReusedFrame, maxReusedFrame},
	} {
		if got := frameCap(c.size); got != c.want {
			t.Errorf("frameCap(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}
