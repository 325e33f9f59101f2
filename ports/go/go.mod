module throttlesim/fairshare

go 1.19
