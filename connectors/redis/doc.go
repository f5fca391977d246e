// Package redis is the 'redis' sink connector: every row of the sink's
// input is a Redis string at the key "<sink name>:<primary key values in
// text, joined by ':'>" holding the row as a JSON object (encode.JSON); a
// deleted row deletes its key. The only write mode is upsert, and the
// sink needs primary_key. Options: redis.url (redis://host:port/db,
// required).
//
// Exactly once, by an epoch guard. The key "sluice:sink:<id>:epoch" holds
// the last epoch the sink applied (Progress.LastEpoch reads it). Write
// WATCHes that key, reads it, and only if its epoch is greater queues the
// epoch's writes in MULTI (runs of up to 1000 keys per MSET or DEL, in
// the order of the changes) followed by SET of the epoch key, then EXECs:
// the check, every write and the epoch update are one atomic step (EXEC
// fails if the epoch key changed after WATCH). A replayed epoch therefore
// changes nothing, even if its values differ. (A Lua script could do the
// same; WATCH + MULTI/EXEC keeps the writes plain commands, needs no
// script cache, and is what design.md §5 names.)
//
// An epoch of up to maxChunkChanges (100k) changes and maxChunkBytes
// (16 MiB) is one transaction, so a reader never sees half of it. A larger
// epoch is split into chunks of that size, each its own guarded
// transaction, sent one after the other; only the last one records the
// epoch, and only after every earlier chunk has succeeded. If Write fails
// or the process dies between chunks, the epoch key still holds the
// previous epoch, and the runtime writes the same epoch again with the
// same changes (they come from the sink log): the chunks are plain
// SET/DEL of the epoch's final value per key, so applying them again is
// harmless. The price is that a reader may see a half-applied large epoch
// between chunks, never an older value than one it has already seen; the
// gain is that no single transaction holds Redis's one thread or its
// query buffer for long.
//
// Every call is bounded: dial, read and write timeouts of ioTimeout
// (5 s) and no client-side retries, so Write returns an error when Redis
// is down and the runtime retries it with backoff.
//
// It imports exec/connector, the sql leaf packages, connectors/internal/encode
// and github.com/redis/go-redis/v9.
package redis
