package projections

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"sync"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// ChunkFilters keeps the sealed history chunks' Bloom filters in memory,
// folded, so that a search finds its candidate chunks without reading every
// filter from the database. It is a bounded cache of the history_chunks
// projection for one database, never a source; see docs/search.md.
type ChunkFilters struct {
	limit int

	mu     sync.Mutex
	agents map[chunkAgent]*agentFilters
	bytes  int
	clock  uint64 // ticks at every use, for least-recently-used eviction
}

type chunkAgent struct{ taskID, agent string }

// agentFilters are one agent's folded filters, foldedBytes per chunk in
// chunk order from chunk 1.
type agentFilters struct {
	mu     sync.Mutex // held while the filters are extended or read
	folded []byte

	// Under ChunkFilters.mu.
	used    uint64 // ChunkFilters.clock at the last use
	counted int    // bytes of folded counted in ChunkFilters.bytes
}

// foldedBits is the size of a folded filter. Bit b of a chunk's filter is
// bit b mod foldedBits of its folded filter, so a needle's probes fold the
// same way and nothing the full filter passes is skipped.
const (
	foldedBits  = 1 << 12
	foldedBytes = foldedBits / 8
)

// DefaultChunkFiltersLimit bounds the bytes of filters kept.
const DefaultChunkFiltersLimit = 32 << 20

// NewChunkFilters returns an empty cache of at most limit bytes.
func NewChunkFilters(limit int) *ChunkFilters {
	return &ChunkFilters{limit: limit, agents: map[chunkAgent]*agentFilters{}}
}

// fold returns the folded filter of a chunk's filter.
func fold(filter []byte) []byte {
	out := make([]byte, foldedBytes)
	if len(filter) != bloomBytes { // malformed, so bloomHas passes it whatever the needle
		for i := range out {
			out[i] = 0xff
		}
		return out
	}
	for part := 0; part < bloomBytes; part += foldedBytes {
		for i, b := range filter[part : part+foldedBytes] {
			out[i] |= b
		}
	}
	return out
}

// candidates returns, in order, the sealed chunks of an agent whose folded
// filter has every probe bit. It first loads the chunks sealed since its
// last search, and reports false when they do not fit in the cache.
func (f *ChunkFilters) candidates(ctx context.Context, q projectionsdb.Querier, taskID, agent string, sealed int64, probes []byte) ([]int64, bool, error) {
	key := chunkAgent{taskID, agent}
	a := f.use(key)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok, err := f.extendLocked(ctx, q, key, a, sealed, 0); !ok || err != nil {
		return nil, false, err
	}
	var bits []uint16
	for i := 0; i+2 <= len(probes); i += 2 {
		bits = append(bits, binary.LittleEndian.Uint16(probes[i:])%foldedBits)
	}
	var out []int64
	for k := range sealed {
		filter := a.folded[k*foldedBytes : (k+1)*foldedBytes]
		pass := true
		for _, b := range bits {
			if filter[b>>3]&(1<<(b&7)) == 0 {
				pass = false
				break
			}
		}
		if pass {
			out = append(out, k+1)
		}
	}
	return out, true, nil
}

// use returns the cached filters of an agent, empty the first time, and
// marks them used now.
func (f *ChunkFilters) use(key chunkAgent) *agentFilters {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.agents[key]
	if a == nil {
		a = &agentFilters{}
		f.agents[key] = a
	}
	f.clock++
	a.used = f.clock
	return a
}

// extendLocked loads the filters of an agent's chunks up to until, with
// a.mu held. It reports false, dropping a, when they do not fit.
func (f *ChunkFilters) extendLocked(ctx context.Context, q projectionsdb.Querier, key chunkAgent, a *agentFilters, until, reserve int64) (bool, error) {
	loaded := int64(len(a.folded) / foldedBytes)
	if loaded >= until {
		return true, nil
	}
	if int(until)*foldedBytes > f.limit {
		f.drop(key, a)
		return false, nil
	}
	rows, err := q.ChunkFilters(ctx, projectionsdb.ChunkFiltersParams{TaskID: key.taskID, Agent: key.agent, After: loaded, Until: until})
	if err != nil {
		return false, err
	}
	before := cap(a.folded)
	grown := a.folded
	if need := int(until) * foldedBytes; need > cap(grown) {
		// A quarter more than needed, so that an agent searched after
		// every sealed chunk is not copied each time. A preload reserves
		// what it will fill, so that the agents it chose fit together, and
		// nothing more is taken when that would pass the limit.
		size := need + need/4
		if reserve > 0 {
			size = max(need, int(reserve)*foldedBytes)
		}
		if size > f.limit {
			size = need
		}
		grown = make([]byte, len(a.folded), size)
		copy(grown, a.folded)
	}
	next := loaded + 1
	for _, r := range rows {
		for ; next < r.ChunkNo; next++ { // a chunk with no row is always a candidate
			grown = append(grown, fold(nil)...)
		}
		grown = append(grown, fold(r.Bloom)...)
		next++
	}
	for ; next <= until; next++ {
		grown = append(grown, fold(nil)...)
	}
	a.folded = grown
	f.account(key, a, cap(grown)-before)
	return true, nil
}

// Loaded returns how many chunks' filters of an agent are in the cache.
func (f *ChunkFilters) Loaded(taskID, agent string) int64 {
	f.mu.Lock()
	a := f.agents[chunkAgent{taskID, agent}]
	f.mu.Unlock()
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return int64(len(a.folded) / foldedBytes)
}

// PreloadOptions configure ChunkFilters.Preload.
type PreloadOptions struct {
	// BatchChunks is how many chunks' filters one read transaction loads.
	// It defaults to 1024. Between batches the load can stop, and a search
	// of the agent being loaded can take its filters.
	BatchChunks int
	// BeforeBatch, when set, runs before each batch. Tests hook it.
	BeforeBatch func(ctx context.Context)
}

// PreloadStats says what a Preload loaded.
type PreloadStats struct {
	Agents int   // agents whose filters were loaded
	Chunks int64 // chunks whose filters were loaded
	// LatestTask and LatestAgent name the agent whose branch changed last
	// among those loaded, or are empty.
	LatestTask, LatestAgent string
}

// Preload loads the filters of the agents whose branch changed most
// recently, as many as fit in the cache together. It reads in its own read
// transactions, one a batch, and returns ctx's error when ctx ends.
func (f *ChunkFilters) Preload(ctx context.Context, store *eventlog.Store, opts PreloadOptions) (PreloadStats, error) {
	var stats PreloadStats
	batch := int64(opts.BatchChunks)
	if batch <= 0 {
		batch = 1024
	}
	tx, err := store.BeginRead(ctx)
	if err != nil {
		return stats, err
	}
	agents, err := queriesOf(tx.DB()).ChunkAgents(ctx)
	tx.Close()
	if err != nil {
		return stats, err
	}
	room := f.limit
	var chosen []projectionsdb.ChunkAgentsRow
	for _, a := range agents {
		if need := int(a.Sealed) * foldedBytes; need <= room {
			chosen = append(chosen, a)
			room -= need
		}
	}
	// The least recent first, so that the most recent is the most
	// recently used when the cache has to drop one.
	for i := len(chosen) - 1; i >= 0; i-- {
		c := chosen[i]
		key := chunkAgent{c.TaskID, c.Agent}
		a := f.use(key)
		for done := false; !done; {
			if err := ctx.Err(); err != nil {
				return stats, err
			}
			if opts.BeforeBatch != nil {
				opts.BeforeBatch(ctx)
			}
			var n int64
			if done, n, err = f.preloadBatch(ctx, store, key, a, c.Sealed, batch); err != nil {
				return stats, err
			}
			stats.Chunks += n
		}
		stats.Agents++
	}
	if len(chosen) > 0 {
		stats.LatestTask, stats.LatestAgent = chosen[0].TaskID, chosen[0].Agent
	}
	return stats, nil
}

// preloadBatch loads up to batch more chunks of an agent in one read
// transaction. It reports done once they are loaded up to sealed or were
// dropped from the cache meanwhile.
func (f *ChunkFilters) preloadBatch(ctx context.Context, store *eventlog.Store, key chunkAgent, a *agentFilters, sealed, batch int64) (done bool, loaded int64, err error) {
	// The transaction before the lock, as a search takes them, because a
	// search holding a reader connection may wait for the lock.
	tx, err := store.BeginRead(ctx)
	if err != nil {
		return false, 0, err
	}
	defer tx.Close()
	a.mu.Lock() // a search meanwhile loads what it needs; the rest is skipped here
	defer a.mu.Unlock()
	f.mu.Lock()
	cached := f.agents[key] == a
	f.mu.Unlock()
	from := int64(len(a.folded) / foldedBytes)
	if !cached || from >= sealed {
		return true, 0, nil
	}
	until := min(from+batch, sealed)
	ok, err := f.extendLocked(ctx, queriesOf(tx.DB()), key, a, until, sealed)
	if err != nil {
		return false, 0, err
	}
	return !ok || until == sealed, until - from, nil
}

// account adds grown bytes to the total if a is still cached, and drops
// the agents searched least recently while the total is over the limit.
func (f *ChunkFilters) account(key chunkAgent, a *agentFilters, grown int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.agents[key] != a {
		return // dropped meanwhile; its memory goes with its last search
	}
	f.bytes += grown
	a.counted += grown
	for f.bytes > f.limit && len(f.agents) > 1 {
		var oldest chunkAgent
		var victim *agentFilters
		for k, o := range f.agents {
			if k != key && (victim == nil || o.used < victim.used) {
				oldest, victim = k, o
			}
		}
		f.bytes -= victim.counted
		delete(f.agents, oldest)
	}
}

// drop forgets a, whose filters do not fit.
func (f *ChunkFilters) drop(key chunkAgent, a *agentFilters) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.agents[key] == a {
		f.bytes -= a.counted
		delete(f.agents, key)
	}
}

// marshalChunkNos is the JSON array of nos, for json_each.
func marshalChunkNos(nos []int64) string {
	b, _ := json.Marshal(nos)
	return string(b)
}

// ForgetTask drops the filters of every agent of a task, for its erasure.
// A search that read the task before the erasure may still load some
// again; they are evicted as any others are.
func (f *ChunkFilters) ForgetTask(taskID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, a := range f.agents {
		if key.taskID == taskID {
			f.bytes -= a.counted
			delete(f.agents, key)
		}
	}
}
