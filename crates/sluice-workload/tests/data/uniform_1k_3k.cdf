# a small HPCC-format CDF for the tests: uniform between 1000 and 3000 bytes
1000 0
3000 100
