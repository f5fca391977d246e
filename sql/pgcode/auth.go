package pgcode

// Codes of authentication, roles and connection limits.
const (
	InvalidAuthorizationSpecification Code = "28000"
	InvalidPassword                   Code = "28P01"
	InvalidCatalogName                Code = "3D000"
	TooManyConnections                Code = "53300"
	ObjectInUse                       Code = "55006"
	CantChangeRuntimeParam            Code = "55P02"
)
