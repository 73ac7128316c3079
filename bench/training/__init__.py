"""What is trained: datasets, model plans and their Keras builds."""
