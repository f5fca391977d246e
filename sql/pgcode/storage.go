package pgcode

// Insufficient resources (class 53) for the store.
const (
	// DiskFull is PostgreSQL's disk_full: a write found no space left on
	// the device.
	DiskFull Code = "53100"
)
