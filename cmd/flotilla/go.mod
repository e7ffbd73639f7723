module github.com/flotilla-sched/flotilla/cmd/flotilla

go 1.26.8

require (
	github.com/flotilla-sched/flotilla v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/btree v1.1.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/flotilla-sched/flotilla => ../..
