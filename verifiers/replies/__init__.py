"""Reading a reply around its answer statements (``verifiers.answers`` finds them): what a
statement holding a box states (``box_holders``), prose that offers another value
(``hedges``), and letters of other scripts that look like Latin ones (``lookalikes``)."""
