-- Operators list users in the order they joined (store.UserLister), a page
-- at a time from a cursor: (time_joined, id) in an index makes each page a
-- range scan, as fast at the millionth user as at the first.
CREATE INDEX auth_users_joined ON auth_users (time_joined, id);
