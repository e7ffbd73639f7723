module github.com/flotilla-sched/flotilla

go 1.26.8

require (
	github.com/google/btree v1.1.3 // indirect
	github.com/leanovate/gopter v0.2.11 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20260908205506-85c1c2202aba // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
