package ops

// SetSplitSetAt lowers the size from which aggregate multisets are stored
// entry by entry (so tests exercise both layouts); it returns the undo.
func SetSplitSetAt(n int) func() {
	old := splitSetAt
	splitSetAt = n
	return func() { splitSetAt = old }
}
