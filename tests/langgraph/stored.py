"""Every stored channel value of the saver as one table, for tests that look at the rows.

A value is a row of ``lg_checkpoint_blobs`` or rides in its checkpoint's row
(``lg_checkpoints.delta_*``, revision 0023): ``FROM`` :data:`VALUES` sees both.
"""

VALUES = (
    "(SELECT thread_id, channel, version, value_type, payload, user_id FROM lg_checkpoint_blobs "
    "UNION ALL SELECT thread_id, delta_channel, delta_version, delta_type, delta_payload, user_id FROM lg_checkpoints "
    "WHERE delta_payload IS NOT NULL) AS stored_values"
)
"""A derived table: ``thread_id, channel, version, value_type, payload, user_id``."""
